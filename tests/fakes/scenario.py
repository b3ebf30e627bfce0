"""Scenarios for the fake ``nvidia-smi`` (tests/fakes/nvidia-smi) and the fake ``pynvml``.

A scenario is JSON: ``{"gpus": [{nvidia-smi field: value}], "apps": [{field: value}],
"rejected_fields": [...]}``, values as nvidia-smi prints them with ``nounits`` ("0", "[N/A]").
Build one in a test::

    from fakes.scenario import app, box, gpu, write_scenario

    gpus = box(8, busy=[2, 3, 7])                     # the seed incident's shape
    gpus[6] = gpu(6, util=98, mem_used=70_000)        # a drafter GPU held by ...
    apps = [app(os.getpid(), gpu=6, used_mib=70_000)]  # ... a real process
    fake_smi.use(write_scenario(tmp_path / "s.json", gpus, apps))

Leave an index out of the list for a missing GPU; use ``fields={"temperature.gpu": "[N/A]"}``
for placeholders; ``rejected_fields=["memory.reserved"]`` plays an older driver.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent
FAKES = TESTS / "fakes"
NVML_FAKE_DIR = FAKES / "nvml"  # on PYTHONPATH: `import pynvml` finds the fake
SCENARIOS = TESTS / "fixtures" / "scenarios"
H200 = TESTS / "fixtures" / "h200"
SEED_CSV = TESTS / "fixtures" / "seed-incident" / "query-gpu_index,memory.used,utilization.gpu.csv"
ENV_VARS = (
    "FAKE_SMI_SCENARIO",
    "FAKE_SMI_HANG",
    "FAKE_SMI_DELAY",
    "FAKE_SMI_RAW",
    "FAKE_SMI_RAW_APPS",
    "FAKE_SMI_RC",
    "FAKE_SMI_LOG",
    "FAKE_NVML_SCENARIO",
    "FAKE_NVML_V1_ONLY",
    "FAKE_NVML_HANG",
    "FAKE_NVML_HEALTH",
    "FAKE_NVML_RELOAD",
)
# Bus ids of an 8-GPU HGX H200 board.
BUS_IDS = ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")


def recorded(kind: str) -> dict[str, str]:
    """The real H200 row of ``q_gpu_<kind>_nounits.csv`` keyed by the header's field names."""
    header = (H200 / f"q_gpu_{kind}_units.csv").read_text().splitlines()[0].split(", ")
    names = [h.split(" [")[0] for h in header]
    values = (H200 / f"q_gpu_{kind}_nounits.csv").read_text().rstrip("\n").split(", ")
    return dict(zip(names, values, strict=True))


def gpu(
    index: int,
    util: int | str = 0,
    mem_used: int | str = 0,
    *,
    mem_total: int | str | None = None,
    mem_reserved: int | str | None = None,
    name: str | None = None,
    uuid: str | None = None,
    fields: dict[str, Any] | None = None,
) -> dict[str, str]:
    """One GPU: an idle H200 as recorded, with a distinct uuid and bus id, then the overrides."""
    g = recorded("idle")
    g.update(
        {
            "index": str(index),
            "uuid": uuid or f"GPU-5eed{index:04x}-3dce-04ce-466c-fd86813f8b{index:02x}",
            "pci.bus_id": f"00000000:{BUS_IDS[index % 8]}:00.0",
            "utilization.gpu": str(util),
            "memory.used": str(mem_used),
        }
    )
    if mem_total is not None:
        g["memory.total"] = str(mem_total)
    if mem_reserved is not None:
        g["memory.reserved"] = str(mem_reserved)
    if name is not None:
        g["name"] = name
    g.update({k: str(v) for k, v in (fields or {}).items()})
    return g


def box(n: int = 8, busy: Iterable[int] = (), **kw: Any) -> list[dict[str, str]]:
    """``n`` idle H200s; those in ``busy`` at 100 % utilisation (with 0 MiB unless told)."""
    busy = set(busy)
    return [gpu(i, util=100 if i in busy else 0, **kw) for i in range(n)]


def app(
    pid: int, gpu: int | str, used_mib: int | str | None = 1002, name: str = "python3"
) -> dict[str, Any]:
    """A compute process; ``gpu`` is the GPU's index (resolved to its uuid) or its uuid."""
    row: dict[str, Any] = {"pid": str(pid), "process_name": name, "gpu": gpu}
    row["used_memory"] = "[N/A]" if used_mib is None else str(used_mib)
    return row


def scenario(
    gpus: Sequence[dict[str, str]],
    apps: Sequence[dict[str, Any]] = (),
    *,
    rejected_fields: Sequence[str] = (),
) -> dict[str, Any]:
    by_index = {g.get("index"): g.get("uuid") for g in gpus}
    rows = []
    for a in apps:
        a = dict(a)
        ref = a.pop("gpu", None)
        if ref is not None and "gpu_uuid" not in a:
            a["gpu_uuid"] = by_index.get(str(ref), ref) if isinstance(ref, int) else ref
        rows.append(a)
    return {"gpus": list(gpus), "apps": rows, "rejected_fields": list(rejected_fields)}


def write_scenario(
    path: str | os.PathLike[str],
    gpus: Sequence[dict[str, str]],
    apps: Sequence[dict[str, Any]] = (),
    *,
    rejected_fields: Sequence[str] = (),
) -> Path:
    """Write a scenario file for FAKE_SMI_SCENARIO / FAKE_NVML_SCENARIO; returns its path."""
    path = Path(path)
    data = scenario(gpus, apps, rejected_fields=rejected_fields)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def bundled(name: str) -> Path:
    """A scenario shipped in tests/fixtures/scenarios/ (``seed-incident``, ``h200-idle`` ...)."""
    return SCENARIOS / f"{name}.json"


def load(name: str) -> dict[str, Any]:
    return json.loads(bundled(name).read_text())


def build_bundled() -> dict[str, dict[str, Any]]:
    """The bundled scenarios, rebuilt from the recorded bytes (a test checks they match)."""
    idle = recorded("idle")
    load_row = recorded("load")
    pid, pname, used, uuid = (
        (H200 / "q_apps_load.csv").read_text().splitlines()[2].split(", ")
    )  # the nounits line: pid, process_name, used_memory, gpu_uuid
    seed = []
    for line in SEED_CSV.read_text().splitlines():
        index, mem, util = (v.split(" ")[0] for v in line.split(", "))
        seed.append(gpu(int(index), util=util, mem_used=mem))
    return {
        "h200-idle": scenario([idle]),
        "h200-load": scenario(
            [load_row], [{"pid": pid, "process_name": pname, "used_memory": used, "gpu": uuid}]
        ),
        "seed-incident": scenario(seed),
    }


class FakeSmi:
    """Handle returned by the ``fake_smi`` fixture: chooses what the fake plays."""

    def __init__(self, tmp_path: Path, monkeypatch: Any) -> None:
        self.tmp_path, self.mp = tmp_path, monkeypatch
        self.log = tmp_path / "fake-smi-calls.jsonl"
        self.scenario_path: Path | None = None
        monkeypatch.setenv("FAKE_SMI_LOG", str(self.log))

    def use(self, what: str | os.PathLike[str] | dict[str, Any]) -> Path:
        """Play a bundled scenario by name, a scenario file, or a scenario dict."""
        if isinstance(what, dict):
            path = self.tmp_path / "fake-smi-scenario.json"
            path.write_text(json.dumps(what))
        elif isinstance(what, str) and bundled(what).exists():
            path = bundled(what)
        else:
            path = Path(what)
        self.scenario_path = path
        self.mp.setenv("FAKE_SMI_SCENARIO", str(path))
        return path

    def write(
        self,
        gpus: Sequence[dict[str, str]],
        apps: Sequence[dict[str, Any]] = (),
        **kw: Any,
    ) -> Path:
        """Build a scenario (see ``scenario``) and play it."""
        return self.use(scenario(gpus, apps, **kw))

    def hang(self) -> None:
        self.mp.setenv("FAKE_SMI_HANG", "1")

    def raw(self, gpu_out: bytes | str, apps_out: bytes | str = b"", rc: int = 0) -> None:
        """Print these bytes verbatim for --query-gpu (and --query-compute-apps)."""
        for name, data in (("gpu", gpu_out), ("apps", apps_out)):
            path = self.tmp_path / f"fake-smi-raw-{name}"
            path.write_bytes(data.encode() if isinstance(data, str) else data)
            self.mp.setenv("FAKE_SMI_RAW" if name == "gpu" else "FAKE_SMI_RAW_APPS", str(path))
        self.mp.setenv("FAKE_SMI_RC", str(rc))

    def nvml(self, v1_only: bool = False, hang: bool = False, reload: bool = False) -> None:
        """Make the fake ``pynvml`` work, playing the current scenario (NVML units); with
        ``reload`` a live probe sees the scenario file's changes."""
        assert self.scenario_path is not None
        self.mp.setenv("FAKE_NVML_SCENARIO", str(self.scenario_path))
        if reload:
            self.mp.setenv("FAKE_NVML_RELOAD", "1")
        if v1_only:
            self.mp.setenv("FAKE_NVML_V1_ONLY", "1")
        if hang:
            self.mp.setenv("FAKE_NVML_HANG", "1")

    def calls(self) -> list[list[str]]:
        """The argument lists the fake was called with, oldest first."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


if __name__ == "__main__":  # regenerate the bundled scenario files
    for sname, data in build_bundled().items():
        bundled(sname).write_text(json.dumps(data, indent=1) + "\n")
        print("wrote", bundled(sname))
