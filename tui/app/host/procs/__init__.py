"""The process tree of the supervised machine (or container)."""
