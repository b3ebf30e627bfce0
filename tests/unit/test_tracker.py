"""The tracker: durations outlive the bounded history; step time from batched lines; a flood's
sample parses only the lines it keeps, and keeps what parsing every line would."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dflash_train.topology import Topology
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.progress import Metric, newest_metrics, parse_line
from dflash_tui.core.diagnosis.tracker import METRICS_KEPT, Tracker

T0 = 1_764_669_600.0


def snap(t: float, lines: list[str] | None = None, busy: bool = True) -> Snapshot:
    return Snapshot.from_dict(
        {
            "time": t,
            "telemetry": {"source": "nvidia-smi"},
            "gpus": [{"index": 0, "uuid": "GPU-0", "util": 100 if busy else 0, "mem_used_mib": 0}],
            "logs": [
                {"path": "/w/missing.log", "exists": False},
                {"path": "/r/output.log", "exists": True, "lines": lines or [], "is_run_log": True},
            ],
        }
    )


def test_durations_outlive_history() -> None:
    tr = Tracker(Topology.parse("0:"), keep=10)
    for k in range(200):  # 400 s of samples, history of 10
        diag = tr.add(snap(T0 + 2 * k))
    assert diag.gpus[0].labels[0].code == "busy-no-memory"
    assert diag.gpus[0].labels[0].since == T0
    missing = next(lg for lg in diag.logs if lg.path == "/w/missing.log")
    assert missing.missing_since == T0
    # Missing at the first sample: the start is a bound, and stays one past the history.
    assert missing.missing_at_least and diag.gpus[0].labels[0].at_least
    assert "for at least 6m38s" in next(f.message for f in diag.findings if f.code == "log-missing")
    diag = tr.add(snap(T0 + 400, busy=False))  # the state breaks: the clock starts again
    assert "busy-no-memory" not in diag.gpus[0].codes
    diag = tr.add(snap(T0 + 402))
    assert diag.gpus[0].labels[0].since == T0 + 402
    assert not diag.gpus[0].labels[0].at_least  # seen to begin: its start is known


def test_step_time_from_batched_lines() -> None:
    tr = Tracker(Topology.parse("0:"))
    tr.add(snap(T0, ["step=1 loss=5.0 tok/s=100"]))
    # 20 steps arrive in one sample, 2 s later: 0.1 s per step, not 2 s.
    tr.add(snap(T0 + 2, [f"step={i} loss=4.0 tok/s=120" for i in range(2, 22)]))
    assert tr.progress.last_step == 21
    assert tr.progress.typical_interval == pytest.approx(0.1)
    assert len(tr.metrics) == 21


def test_history_keeps_no_log_text() -> None:
    tr = Tracker(Topology.parse("0:"))
    tr.add(snap(T0, ["x" * 1000] * 5000))
    assert all(lg.lines == () for s in tr.history for lg in s.logs)
    assert tr.history[-1].logs[1].exists  # the rest of the log state is kept


def _every_line(lines: list[str], keep: int) -> tuple[list[Metric], Metric | None]:
    """The reference: every line parsed, the newest ``keep`` kept, the last one with a step."""
    parsed = [m for m in map(parse_line, lines) if m is not None]
    return parsed[-keep:], next((m for m in reversed(parsed) if m.step is not None), None)


def test_flood_keeps_what_parsing_every_line_keeps() -> None:
    tr = Tracker(Topology.parse("0:"))
    lines = [f"step={i} loss={i / 1000} tok/s=2.8K" if i % 3 else f"plain {i}" for i in range(3000)]
    tr.add(snap(T0, lines))
    kept, last = _every_line(lines, METRICS_KEPT)
    assert [m for _, m in tr.metrics] == kept
    assert tr.progress.last == last and tr.progress.last_step == 2999


def test_flood_without_steps_at_its_end_still_finds_the_last_step() -> None:
    # The newest lines report tok/s alone: the step folded is older than the lines kept.
    lines = ["step=7 loss=2.0 tok/s=100"] + ["tok/s=120"] * (METRICS_KEPT + 50)
    tr = Tracker(Topology.parse("0:"))
    tr.add(snap(T0, lines))
    kept, last = _every_line(lines, METRICS_KEPT)
    assert [m for _, m in tr.metrics] == kept
    assert last is not None and tr.progress.last_step == 7


@given(st.lists(st.sampled_from(["step=1 loss=1", "step=2 tok/s=3", "tok/s=4", "x"]), max_size=30))
def test_newest_metrics_matches_every_line(lines: list[str]) -> None:
    for keep in (1, 3, 10):
        found = newest_metrics(lines, keep)
        kept, last = _every_line(lines, keep)
        assert found[-keep:] == kept
        assert next((m for m in reversed(found) if m.step is not None), None) == last
