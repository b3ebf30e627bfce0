"""The event a Slurm node host's source sends while the job holds no node for it (queued,
ended, or none submitted): no probe runs there, so no link is up, down or coming."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NoJob:
    """No job runs on this node host's node now; its pane says so instead of a link state."""


NO_JOB = NoJob()
NO_JOB_TEXT = "no job on this node"  # the header's words
NO_JOB_SHORT = "no job here"  # the overview's, in its 16 columns beside the node's name
