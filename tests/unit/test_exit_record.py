"""The exit record a run or a batch script writes (``CODE TIME``) has one reader,
``rundir.parse_exit``; Slurm's reading of a job it forgot (``query.from_record``) goes through
it. The record is a file on the run's machine: whatever is in it is an unknown part, never a
traceback."""

from __future__ import annotations

import pytest

from dflash_tui.core.base.rundir import parse_exit
from dflash_tui.core.control.slurm.query import from_record

HOSTILE = [
    None,
    "",
    "   ",
    "abc 1767225600",
    "3abc 1767225600",  # a code that is not all digits
    "\uff13 1767225600",  # a fullwidth digit: a digit to str.isdigit, not to the batch script
    "-1 1767225600",
    "9" * 5000,  # past int()'s 4300 digits: a ValueError without the cap
    "9" * 19,
    "\x1b[2J 1",
]


@pytest.mark.parametrize("record", HOSTILE, ids=lambda r: repr(r)[:16])
def test_a_malformed_code_is_unknown(record: str | None) -> None:
    assert parse_exit(record)[0] is None
    job = from_record("12", record)
    assert (job.state, job.exit_code, job.source, job.run_state) == (
        "UNKNOWN", None, "none", "unknown"
    )  # fmt: skip


@pytest.mark.parametrize(
    ("record", "ended"),
    [("3 nan", None), ("3 inf", None), ("3 1" + "0" * 5000, None), ("3 x", None), ("3", None),
     ("3 1767225600.5\n", 1767225600.5)],
    ids=lambda r: repr(r)[:16],
)  # fmt: skip
def test_a_malformed_time_is_unknown_and_the_code_stands(record: str, ended: float | None) -> None:
    assert parse_exit(record) == (3, ended)
    job = from_record("12", record)
    assert (job.state, job.exit_code, job.source) == ("FAILED", 3, "record")


def test_a_zero_code_completed() -> None:
    job = from_record("12", "0 1767225600")
    assert (job.state, job.exit_code, job.run_state) == ("COMPLETED", 0, "exited")
