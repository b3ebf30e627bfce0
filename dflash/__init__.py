"""A compact DFlash drafter trainer. Importing this package stays light (no torch)."""
