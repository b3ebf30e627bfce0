"""Each sample's per-GPU views are computed once, whatever the number of diagnoses whose window
holds it (the window is 60 s or more, a diagnosis a sample), and the kept answer is
the one a fresh computation gives."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from dflash_train.topology import Topology
from dflash_tui.app import scenes
from dflash_tui.core.diagnosis import diagnose as diagnose_mod
from dflash_tui.core.diagnosis.thresholds import Thresholds
from dflash_tui.core.diagnosis.tracker import Tracker


def fresh(snap: Any) -> Any:
    """The same sample as a new object (no memo)."""
    return dataclasses.replace(snap)


def test_a_sample_is_looked_at_once_across_diagnoses(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[float] = []
    real = diagnose_mod._compute_views

    def counted(snap: Any, topology: Topology, th: Thresholds) -> Any:
        calls.append(snap.time)
        return real(snap, topology, th)

    monkeypatch.setattr(diagnose_mod, "_compute_views", counted)
    snaps = scenes.healthy_run(samples=12, step=5.0)  # all 12 inside one 60 s window
    tracker = Tracker(Topology.parse("0-4:5-7"))
    for s in snaps:
        tracker.add(s)
    # 12 diagnoses over windows of 1..12 samples: 12 computations, not 78.
    assert len(calls) == len(snaps)
    assert sorted(set(calls)) == sorted(calls)


def test_the_kept_answer_is_the_computed_one() -> None:
    snaps = scenes.seed_incident()
    topo = Topology.parse("0-4:5-7")
    strict = Thresholds(persist_s=1.0)
    for s in snaps:
        # Two settings on one sample: each its own answer, equal to a fresh computation.
        for th in (Thresholds(), strict):
            kept = diagnose_mod._sample_views(s, topo, th).views
            assert kept is diagnose_mod._sample_views(s, topo, th).views
            assert kept == diagnose_mod._compute_views(fresh(s), topo, th)
    last = snaps[-1]
    a = diagnose_mod.diagnose(snaps, topo)
    b = diagnose_mod.diagnose([fresh(s) for s in snaps], topo)
    assert a == b and last.time == a.time
