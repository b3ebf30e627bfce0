"""What is wrong (findings) and what happened (the event timeline)."""
