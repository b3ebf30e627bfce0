"""The supervisor's core: probe, feed, diagnosis, control. Never imports Textual."""
