"""Log tails: one per watched log, the run's own log first."""
