"""A job's state from its members' run states, and its one line (tui/core/diagnosis/job.py)."""

from __future__ import annotations

import pytest

from dflash_tui.core.diagnosis.job import MemberView, job_line, job_state


@pytest.mark.parametrize(
    ("states", "want"),
    [
        (["running", "running"], "running"),
        (["running", "starting"], "starting"),
        (["running", "killed"], "broken"),
        (["exited", "running"], "broken"),
        (["killed", "killed"], "killed"),
        (["exited", "killed"], "ended"),
        ([], "unknown"),
    ],
)
def test_the_job_is_as_alive_as_its_least_alive_member(states: list[str], want: str) -> None:
    assert job_state(states) == want


def test_the_job_line_names_every_member_in_rank_order() -> None:
    line = job_line("pair", [MemberView("a", "running", "r1", 12), MemberView("b", "killed")])
    assert line == "job pair BROKEN (2 nodes): a running step 12 · b killed"
