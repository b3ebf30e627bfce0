"""The status documents as OpenMetrics (pure): a real status document recorded on the H200
(tests/fixtures/h200-live/status_run.json) rendered and parsed back with prometheus_client's
OpenMetrics parser; progress, the supervisor, a non-finite loss and an unreachable host."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from prometheus_client.openmetrics.parser import text_string_to_metric_families

from dflash_tui.core.base.codes import GPU_LABELS
from dflash_tui.core.export.openmetrics import exposition

FIXTURE = Path(__file__).parents[1] / "fixtures/h200-live/status_run.json"
T = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def parse(docs: list[dict[str, Any]], now: float) -> dict[tuple[str, tuple[Any, ...]], float]:
    text = exposition(docs, now).decode()
    assert text.endswith("# EOF\n")
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def key(name: str, **labels: str) -> tuple[str, tuple[Any, ...]]:
    return (name, tuple(sorted(labels.items())))


def test_the_h200_documents_gpus_and_run() -> None:
    doc = json.loads(FIXTURE.read_text())
    m = parse([doc], T)
    host = doc["host"]
    assert m[key("dflash_host_up", host=host)] == 1.0
    for g in doc["gpus"]:
        lab = {"host": host, "gpu": str(g["index"]), "role": g["role"]}
        assert m[key("dflash_gpu_utilization_percent", **lab)] == g["util"]
        assert m[key("dflash_gpu_memory_used_bytes", **lab)] == g["mem_used_mib"] * 2**20
        assert m[key("dflash_gpu_memory_total_bytes", **lab)] == g["mem_total_mib"] * 2**20
        assert m[key("dflash_gpu_power_watts", **lab)] == g["power_w"]
        assert m[key("dflash_gpu_temperature_celsius", **lab)] == g["temp_c"]
        for code in GPU_LABELS:
            want = 1.0 if code in g["labels"] else 0.0
            assert m[key("dflash_gpu_label", code=code, **lab)] == want
    assert m[key("dflash_run_state", host=host, state="running")] == 1.0
    assert m[key("dflash_run_state", host=host, state="exited")] == 0.0
    assert m[key("dflash_findings", host=host, severity="error")] == 0.0
    assert not any(k[0] == "dflash_run_step" for k in m)  # no step seen: left out, not 0


def test_progress_supervisor_nonfinite_loss_and_an_unreachable_host() -> None:
    doc = {
        "host": "gpu-a",
        "time": "2027-01-15T07:59:50Z",
        "gpus": [{"index": 3, "role": "drafter", "util": None, "labels": ["near-oom"]}],
        "run": {"state": "running"},
        "findings": [{"severity": "error"}, {"severity": "warning"}, {"severity": "warning"}],
        "progress": {
            "step": 120,
            "loss": None,
            "loss_finite": False,
            "tok_s": 2810.5,
            "last_step_age_s": 4.0,
        },
        "supervisor": {"restarts": 2, "fresh": True, "heartbeat_age_s": 1.5},
    }
    down = {"host": "gpu-b", "error": "gpu-b: connection refused", "run": {"state": "unknown"},
            "gpus": [], "findings": [{"severity": "error"}], "progress": None}  # fmt: skip
    m = parse([doc, down], T)
    assert m[key("dflash_run_step", host="gpu-a")] == 120
    assert math.isnan(m[key("dflash_run_loss", host="gpu-a")])
    assert m[key("dflash_run_tokens_per_second", host="gpu-a")] == 2810.5
    assert m[key("dflash_run_last_step_age_seconds", host="gpu-a")] == 14.0  # 4 s + 10 s later
    assert m[key("dflash_run_restarts", host="gpu-a")] == 2
    assert m[key("dflash_supervisor_fresh", host="gpu-a")] == 1.0
    assert m[key("dflash_findings", host="gpu-a", severity="warning")] == 2
    lab = {"host": "gpu-a", "gpu": "3", "role": "drafter"}
    assert key("dflash_gpu_utilization_percent", **lab) not in m  # not measured: left out
    assert m[key("dflash_gpu_label", code="near-oom", **lab)] == 1.0
    assert m[key("dflash_host_up", host="gpu-b")] == 0.0
    assert m[key("dflash_run_state", host="gpu-b", state="unknown")] == 1.0
    assert key("dflash_run_restarts", host="gpu-b") not in m
