"""NvHealth (tui/core/probe/nvhealth.py) against the fake NVML playing recorded health readings:
the device machine's H200 (tests/fixtures/machine/nvml_health_h200.json: retired pages Not
Supported, rows remapped [0, 0, 0, 0], one PCIe replay) and, where no H200 reading can show it,
NVML's documented semantics (retired-page address lists, remapped-row tuples, Xid events from an
event set, NVML_ERROR_GPU_IS_LOST). Then the readings through Snapshot and the diagnosis."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from dflash_train.topology import Topology
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.diagnose import diagnose
from dflash_tui.core.probe import gpu as gpu_part
from dflash_tui.core.probe.gpu import SLOW_EVERY_S, SlowReads
from dflash_tui.core.probe.nvhealth import NvHealth

TESTS = Path(__file__).resolve().parents[1]
RECORDED = json.loads((TESTS / "fixtures" / "machine" / "nvml_health_h200.json").read_text())
SCENARIOS = TESTS / "fixtures" / "scenarios"
NS = {"error": "NVMLError_NotSupported: Not Supported", "value": 3}


def fake_nvml(tmp_path: Path, mp: pytest.MonkeyPatch, health: dict[str, Any]) -> ModuleType:
    """A fresh fake pynvml, initialised, playing the seed incident's 8 GPUs and ``health``."""
    path = tmp_path / "health.json"
    path.write_text(json.dumps(health))
    mp.setenv("FAKE_NVML_SCENARIO", str(SCENARIOS / "seed-incident.json"))
    mp.setenv("FAKE_NVML_HEALTH", str(path))
    spec = importlib.util.spec_from_file_location("fake_pynvml", TESTS / "fakes/nvml/pynvml.py")
    assert spec is not None and spec.loader is not None
    nv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nv)
    nv.nvmlInit()
    return nv


def eight(**by_index: dict[str, Any]) -> dict[str, Any]:
    """The H200 reading for each of 8 GPUs, some replaced."""
    base = RECORDED["gpus"][0]
    return {"gpus": [{**copy.deepcopy(base), "index": i, **by_index.get(f"g{i}", {})}
                     for i in range(8)], "xid_events": []}  # fmt: skip


def test_recorded_h200_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nv = fake_nvml(tmp_path, monkeypatch, eight())
    errors: list[str] = []
    r = NvHealth(nv, True).read(errors)
    g = r["gpus"][0]
    assert g["retired_pages"] is None  # Not Supported on the H200: it remaps rows instead
    assert g["remapped_rows"] == {
        "correctable": 0, "uncorrectable": 0, "pending": False, "failure": False
    }  # fmt: skip
    assert g["pcie_replay"] == 1 and g["xids"] == [] and not g["lost"]
    assert r["xid_watch"] == "nvml" and errors == [] and len(r["gpus"]) == 8
    assert g["uuid"] and len({x["uuid"] for x in r["gpus"]}) == 8


def test_retired_pages_and_remapped_rows_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # NVML returns the retired pages' addresses (one list per cause) and the pending flag;
    # remapped rows as (correctable, uncorrectable, pending, failure occurred).
    health = eight(
        g2={"retired_pages_sbe": [0x1A000, 0x2B000], "retired_pages_dbe": [0x3C000],
            "retired_pages_pending": 1},
        g3={"remapped_rows": [1, 2, 1, 0], "pcie_replay": 517},
        g4={"retired_pages_sbe": [], "retired_pages_dbe": NS, "retired_pages_pending": 0},
    )  # fmt: skip
    r = NvHealth(fake_nvml(tmp_path, monkeypatch, health), False).read([])
    g2, g3, g4 = r["gpus"][2], r["gpus"][3], r["gpus"][4]
    assert g2["retired_pages"] == {"single_bit": 2, "double_bit": 1, "pending": True}
    assert g3["remapped_rows"] == {
        "correctable": 1, "uncorrectable": 2, "pending": True, "failure": False
    }  # fmt: skip
    assert g3["pcie_replay"] == 517
    assert g4["retired_pages"] == {"single_bit": 0, "double_bit": None, "pending": False}
    assert "one sample" in r["xid_watch"]  # --once: no watcher, no events


def test_xid_events_drained_once_and_new_ones_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    health = eight()
    health["xid_events"] = [{"gpu": 5, "code": 48}, {"gpu": 5, "code": 63}, {"gpu": 1, "code": 13}]
    nv = fake_nvml(tmp_path, monkeypatch, health)
    w = NvHealth(nv, True)
    before = time.time()
    r = w.read([])
    assert [x["code"] for x in r["gpus"][5]["xids"]] == [48, 63]
    # NVML's event data has no time (c_nvmlEventData_t: device, eventType, eventData, and the
    # instance ids): the probe stamps the moment it drained the event.
    assert all(before <= x["time"] <= time.time() for x in r["gpus"][5]["xids"])
    assert [x["code"] for x in r["gpus"][1]["xids"]] == [13]
    assert all(not g["xids"] for g in r["gpus"] if g["index"] not in (1, 5))
    assert all(not g["xids"] for g in w.read([])["gpus"])  # drained: not told twice
    health["xid_events"].append({"gpu": 7, "code": 79})  # appears while the probe watches
    (tmp_path / "health.json").write_text(json.dumps(health))
    r = w.read([])
    assert [(g["index"], [x["code"] for x in g["xids"]]) for g in r["gpus"] if g["xids"]] == [
        (7, [79])
    ]
    # A one-shot reader registers no event set, so it never sees them (NVML queues events
    # only for a set registered before they happen).
    once = NvHealth(nv, False).read([])
    assert all(not g["xids"] for g in once["gpus"])


def test_event_wait_failure_is_an_error_not_a_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    health = eight()
    health["xid_events"] = [{"fail": 999}]
    errors: list[str] = []
    NvHealth(fake_nvml(tmp_path, monkeypatch, health), True).read(errors)
    assert len(errors) == 1 and "NVML event wait failed" in errors[0]
    errors.clear()
    NvHealth(fake_nvml(tmp_path, monkeypatch, eight()), True).read(errors)
    assert errors == []  # the usual Timeout is no error


def test_gpu_fallen_off_the_bus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nv = fake_nvml(tmp_path, monkeypatch, eight(g6={"lost": True}))
    w = NvHealth(nv, True)  # registering events on the lost GPU fails: the rest still watched
    r = w.read([])
    lost = [g for g in r["gpus"] if g["lost"]]
    assert [g["index"] for g in lost] == [6] and "GPU is lost" in (lost[0]["error"] or "")
    assert lost[0]["uuid"] is None and lost[0]["remapped_rows"] is None
    assert r["gpus"][5]["remapped_rows"] is not None


def _diagnosed(reading: dict[str, Any]) -> dict[str, Any]:
    gpus = [{"index": i, "uuid": g["uuid"], "bus_id": f"00000000:{18 + i:02X}:00.0"}
            for i, g in enumerate(reading["gpus"])]  # fmt: skip
    snap = Snapshot.from_dict({"time": 1000.0, "machine": {"nvml": reading}, "gpus": gpus,
                               "telemetry": {"source": "nvml"}})  # fmt: skip
    d = diagnose([snap], Topology((0, 1, 2, 3, 4), (5, 6, 7)))
    return {f.code: f for f in d.findings}


def test_readings_become_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    health = eight(g6={"lost": True})
    health["xid_events"] = [{"gpu": 5, "code": 48}]
    r = NvHealth(fake_nvml(tmp_path, monkeypatch, health), True).read([])
    codes = _diagnosed(r)
    assert codes["gpu-lost"].gpus == (6,) and "GPU is lost" in codes["gpu-lost"].message
    assert codes["gpu-xid"].gpus == (5,) and "Xid 48" in codes["gpu-xid"].message
    assert codes["gpu-xid"].severity == "error"
    healthy = NvHealth(fake_nvml(tmp_path, monkeypatch, eight()), True).read([])
    assert not {"gpu-lost", "gpu-xid"} & set(_diagnosed(healthy))


def test_live_probe_reports_an_xid_added_while_it_watches(
    tmp_path: Path, fake_smi: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real probe process (--interval, NVML through the fake): no Xid, then one recorded
    while it runs, reported once on its GPU, with the rest of the H200 reading."""
    from fakes.proberun import ProbeStream

    fake_smi.nvml()
    path = tmp_path / "health-live.json"
    health = eight()
    path.write_text(json.dumps(health))
    monkeypatch.setenv("FAKE_NVML_HEALTH", str(path))
    with ProbeStream("--run-root", str(tmp_path / "runs"), interval=0.2) as probe:
        first = probe.next()["machine"]["nvml"]
        assert first["xid_watch"] == "nvml" and first["gpus"][3]["pcie_replay"] == 1
        health["xid_events"] = [{"gpu": 3, "code": 94}]
        path.write_text(json.dumps(health))
        seen = probe.until(lambda s: any(g["xids"] for g in s["machine"]["nvml"]["gpus"]))
        hit = [g for g in seen[-1]["machine"]["nvml"]["gpus"] if g["xids"]]
        assert [(g["index"], g["xids"][0]["code"]) for g in hit] == [(3, 94)]
        assert not any(g["xids"] for g in probe.next()["machine"]["nvml"]["gpus"])


def test_the_recorded_raw_answers_read_as_on_the_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench/device_health.sh on the device machine's H200 (tests/fixtures/h200-health/) kept
    both what pynvml answered (nvml_raw.json) and what NvHealth made of it there
    (nvhealth.json): played back through the fake, NvHealth must make the same of it."""
    rec = TESTS / "fixtures" / "h200-health"
    raw = json.loads((rec / "nvml_raw.json").read_text())
    there = json.loads((rec / "nvhealth.json").read_text())
    nv = fake_nvml(tmp_path, monkeypatch, {"gpus": raw["gpus"], "xid_events": []})
    errors: list[str] = []
    here = NvHealth(nv, False).read(errors)["gpus"][0]
    want = there["once"]["gpus"][0]
    assert raw["gpus"][0]["retired_pages_sbe"]["error"].endswith("Not Supported")
    assert {k: v for k, v in here.items() if k != "uuid"} == {
        k: v for k, v in want.items() if k != "uuid"
    }
    assert errors == there["errors"] == []


class Clock:
    """time.monotonic for the probe's slow reads, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_replay_counter_read_once_per_slow_period_and_carried_between(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The counter costs ~0.3 ms a read on the H200 (bench/nvml_calls.py): it is read once per
    # SLOW_EVERY_S, its last answer carried; the cheap readings stay fresh every sample.
    clock = Clock()
    monkeypatch.setattr(gpu_part, "time", clock)
    health = eight(g3={"pcie_replay": 5, "remapped_rows": [0, 0, 0, 0]})
    w = NvHealth(fake_nvml(tmp_path, monkeypatch, health), True)
    assert w.read([])["gpus"][3]["pcie_replay"] == 5
    health["gpus"][3] |= {"pcie_replay": 9, "remapped_rows": [0, 1, 1, 0]}
    (tmp_path / "health.json").write_text(json.dumps(health))
    clock.now += SLOW_EVERY_S - 0.5
    g3 = w.read([])["gpus"][3]
    assert g3["pcie_replay"] == 5  # carried
    assert g3["remapped_rows"]["uncorrectable"] == 1  # read every sample
    clock.now += 1.0
    assert w.read([])["gpus"][3]["pcie_replay"] == 9  # read again once the period is over


def test_slow_reads_keep_a_failure_too_and_each_key_apart() -> None:
    reads: list[str] = []

    def read(key: str, value: object) -> object:
        reads.append(key)
        return value

    slow = SlowReads(every=10.0)
    assert slow.get(0, lambda: read("a", None)) is None
    assert slow.get(0, lambda: read("a", 7)) is None  # a failed read is carried as one
    assert slow.get(1, lambda: read("b", 3)) == 3  # another GPU is read on its own
    assert reads == ["a", "b"]
    slow.every = 0.0
    assert slow.get(0, lambda: read("a", 7)) == 7
    assert reads == ["a", "b", "a"]


def test_power_limit_read_once_per_slow_period(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The power limit costs as much as the replay counter; the power drawn is read every sample.
    clock = Clock()
    monkeypatch.setattr(gpu_part, "time", clock)
    scenario = json.loads((SCENARIOS / "seed-incident.json").read_text())
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(scenario))
    nv = fake_nvml(tmp_path, monkeypatch, eight())
    monkeypatch.setenv("FAKE_NVML_SCENARIO", str(path))
    monkeypatch.setenv("FAKE_NVML_RELOAD", "1")
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    reader = gpu_part.Nvml()
    first = reader.read([])[0][0]
    scenario["gpus"][0] |= {"power.limit": "500.00", "power.draw": "123.00"}
    path.write_text(json.dumps(scenario))
    clock.now += SLOW_EVERY_S - 0.5
    carried = reader.read([])[0][0]
    assert carried["power_limit_w"] == first["power_limit_w"] != 500.0
    assert carried["power_w"] == 123.0
    clock.now += 1.0
    assert reader.read([])[0][0]["power_limit_w"] == 500.0


def test_a_call_that_returns_just_after_its_timeout_gives_its_result() -> None:
    # The call thread's wait timed out, then the call returned before the probe looked: its
    # answer is taken, not lost as "no result and no error".
    from dflash_tui.core.probe.main import Call, Probe, parse_args

    probe = Probe(parse_args(["--once", "--no-nvml", "--run-root=/nonexistent"]))
    late = Call(lambda: "answer")

    def run(fn: object, timeout: float) -> Call:
        assert late.is_alive()  # the wait is over while it still runs
        late.run()  # then it returns, before the probe looks
        return late

    probe.calls.run = run  # type: ignore[method-assign]
    try:
        assert probe.nvml_call(lambda: None, 0.1) == ("answer", None, False)
        assert probe.nvml_stuck is None
    finally:
        probe.close()
