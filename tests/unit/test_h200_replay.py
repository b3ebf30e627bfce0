"""Real bytes from an H200: the probe's own output replayed through the diagnosis."""

from __future__ import annotations

import json
from pathlib import Path

from dflash_train.topology import Topology
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.diagnose import diagnose

LIVE = Path(__file__).resolve().parents[1] / "fixtures" / "h200-live"


def load(name: str) -> Snapshot:
    return Snapshot.from_json((LIVE / name).read_text())


def smi_used(name: str) -> int:
    return int((LIVE / name).read_text().split(", ")[6])


def test_nvml_and_nvidia_smi_mean_the_same_memory() -> None:
    for probe, csv in (
        ("probe_idle_nvml.json", "q_gpu_idle.csv"),
        ("probe_load_nvml.json", "q_gpu_load.csv"),
    ):
        snap = load(probe)
        assert snap.telemetry.source == "nvml"
        assert snap.gpus[0].mem_used_mib == smi_used(csv)
    smi = load("probe_idle_smi.json")
    assert smi.telemetry.source == "nvidia-smi" and smi.gpus[0].mem_used_mib == 0


def test_recorded_load_is_owned_by_the_run_that_launched_it() -> None:
    snap = load("probe_load_nvml.json")
    launch = json.loads((LIVE / "launch.json").read_text())
    # The probe ran without --run-root; give it the run record the launcher returned.
    raw = json.loads((LIVE / "probe_load_nvml.json").read_text())
    raw["run"] = {
        "id": launch["run_id"],
        "dir": launch["dir"],
        "pid": launch["pid"],
        "pgid": launch["pgid"],
        "started_at": raw["time"] - 30,
    }
    with_run = Snapshot.from_dict(raw)
    d = diagnose([with_run], Topology.parse("0:"))
    (gpu,) = d.gpus
    assert gpu.codes == ("ok",) and gpu.processes[0].owner == "run"
    assert gpu.gpu is not None and gpu.gpu.name == "NVIDIA H200" and gpu.gpu.util == 99
    # Without the record the same process is someone else's job on our GPU.
    d = diagnose([snap], Topology.parse("0:"))
    assert d.gpus[0].codes == ("foreign-process",)
