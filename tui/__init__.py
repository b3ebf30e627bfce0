"""dflash-tui: supervise a live DFlash drafter-training run."""

__version__ = "0.1.0"
