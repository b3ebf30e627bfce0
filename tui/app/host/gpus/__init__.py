"""GPU panels: one per GPU, in a grid that fits eight in 120x40 and scrolls beyond."""
