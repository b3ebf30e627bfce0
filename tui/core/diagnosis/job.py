"""A job across hosts seen as one (pure): its state from its members' run states, and the
one line that says it (``status`` prints it; the app's overview draws it as one row).

A job is as alive as its least alive member: all members alive is the job running; some alive
and some not is ``broken`` (the ranks left wait in collectives that never complete, and the
supervisor stops them); no member alive is the members' common state, else ``ended``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dflash_tui.core.base.rundir import ALIVE_STATES

BROKEN = "broken"


@dataclass(frozen=True)
class MemberView:
    """One member as the job row shows it."""

    label: str
    state: str  # the member's run state (starting | running | exited | ... | unknown)
    run_id: str | None = None
    step: int | None = None


def job_state(states: Sequence[str]) -> str:
    if not states:
        return "unknown"
    alive = [s in ALIVE_STATES for s in states]
    if all(alive):
        return "starting" if "starting" in states else "running"
    if any(alive):
        return BROKEN
    return states[0] if len(set(states)) == 1 else "ended"


def member_text(m: MemberView) -> str:
    step = f" step {m.step}" if m.step is not None else ""
    return f"{m.label} {m.state}{step}"


def job_line(name: str, members: Sequence[MemberView]) -> str:
    """``job pair RUNNING (2 nodes): a running step 12 · b running step 12`` (plain text:
    labels come from the config, states from our words; the caller makes it terminal-safe)."""
    state = job_state([m.state for m in members]).upper()
    parts = " · ".join(member_text(m) for m in members)
    return f"job {name} {state} ({len(members)} nodes): {parts}"
