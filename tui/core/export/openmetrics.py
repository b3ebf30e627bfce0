"""The status documents as OpenMetrics (pure: documents in, metric families out).

One home for the metric names; built from ``status --json``'s documents (one per host, an
unreachable host's too), so ``dflash-tui metrics``, ``status --openmetrics`` and
``status --json`` never disagree. prometheus-client (the ``metrics`` extra) builds and writes
the families; nothing here samples or serves.

Per GPU (labels host, gpu, role): utilization, memory used/total (bytes), power (watts),
temperature (Celsius), and ``dflash_gpu_label`` 1/0 for every label code. Per host: link up;
run state (1 for the current one of every state), step, loss (NaN when not finite), tok/s,
seconds since the last step, restarts (the supervisor's), findings by severity, supervisor
heartbeat age. A value nobody measured is left out, not written as 0.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.openmetrics.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from dflash_tui.core.base.codes import GPU_LABELS
from dflash_tui.core.base.rundir import RUN_STATES
from dflash_tui.core.diagnosis.severity import SEVERITIES

PREFIX = "dflash"
MIB = 1024 * 1024


def _epoch(iso: Any) -> float | None:
    if not isinstance(iso, str):
        return None
    try:
        t = dt.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None
    return t.replace(tzinfo=dt.timezone.utc).timestamp()


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


class _Families:
    """Gauges by name, created on first use, in a stable order."""

    def __init__(self) -> None:
        self.by_name: dict[str, GaugeMetricFamily] = {}

    def add(self, name: str, doc: str, labels: dict[str, str], value: float | None,
            unit: str = "") -> None:  # fmt: skip
        if value is None:
            return
        fam = self.by_name.get(name)
        if fam is None:
            fam = GaugeMetricFamily(f"{PREFIX}_{name}", doc, labels=list(labels), unit=unit)
            self.by_name[name] = fam
        fam.add_metric([labels[k] for k in labels], value)


def families(docs: Sequence[dict[str, Any]], now: float) -> list[Metric]:
    """The metric families of the status documents at time ``now``."""
    out = _Families()
    for doc in docs:
        host = str(doc.get("host"))
        out.add("host_up", "1 when the host answered its last sample", {"host": host},
                0.0 if doc.get("error") else 1.0)  # fmt: skip
        for g in doc.get("gpus") or []:
            _gpu(out, host, g)
        _run(out, host, doc, now)
    return list(out.by_name.values())


def _gpu(out: _Families, host: str, g: dict[str, Any]) -> None:
    lab = {"host": host, "gpu": str(g.get("index")), "role": str(g.get("role"))}
    out.add("gpu_utilization", "GPU utilization", lab, _num(g.get("util")), "percent")
    used, total = _num(g.get("mem_used_mib")), _num(g.get("mem_total_mib"))
    out.add("gpu_memory_used", "GPU memory used", lab, used * MIB if used is not None else None,
            "bytes")  # fmt: skip
    out.add("gpu_memory_total", "GPU memory total", lab,
            total * MIB if total is not None else None, "bytes")  # fmt: skip
    out.add("gpu_power", "GPU power draw", lab, _num(g.get("power_w")), "watts")
    out.add("gpu_temperature", "GPU temperature", lab, _num(g.get("temp_c")), "celsius")
    have = set(g.get("labels") or [])
    for code in GPU_LABELS:
        out.add("gpu_label", "1 when the diagnosis gives the GPU this label", {**lab, "code": code},
                1.0 if code in have else 0.0)  # fmt: skip


def _run(out: _Families, host: str, doc: dict[str, Any], now: float) -> None:
    h = {"host": host}
    run = doc.get("run") or {}
    state = run.get("state")
    for s in (*RUN_STATES, "unknown"):
        out.add("run_state", "1 for the run's current state", {**h, "state": s},
                1.0 if s == state else 0.0)  # fmt: skip
    prog = doc.get("progress") or {}
    out.add("run_step", "the run's last step", h, _num(prog.get("step")))
    loss = _num(prog.get("loss"))
    out.add("run_loss", "the run's last loss (NaN when not finite)", h,
            math.nan if prog and prog.get("loss_finite") is False else loss)  # fmt: skip
    out.add("run_tokens_per_second", "the run's last tok/s", h, _num(prog.get("tok_s")))
    age = _num(prog.get("last_step_age_s"))
    taken = _epoch(doc.get("time"))
    if age is not None and taken is not None:
        age += max(now - taken, 0.0)  # the sample was taken before this scrape
    out.add("run_last_step_age", "seconds since the run's last step", h, age, "seconds")
    counts = dict.fromkeys(SEVERITIES, 0)
    for f in doc.get("findings") or []:
        if f.get("severity") in counts:
            counts[f["severity"]] += 1
    for sev, n in counts.items():
        out.add("findings", "findings by severity", {**h, "severity": sev}, float(n))
    sup = doc.get("supervisor")
    if isinstance(sup, dict):
        out.add("run_restarts", "restarts by the headless supervisor", h, _num(sup.get("restarts")))
        out.add("supervisor_fresh", "1 while the supervisor's heartbeat is fresh", h,
                1.0 if sup.get("fresh") else 0.0)  # fmt: skip
        out.add("supervisor_heartbeat_age", "seconds since the supervisor's heartbeat", h,
                _num(sup.get("heartbeat_age_s")), "seconds")  # fmt: skip


class DocsCollector(Collector):
    """A collector over a callable that gives the latest documents (read at each scrape)."""

    def __init__(self, docs: Any, clock: Any) -> None:
        self.docs, self.clock = docs, clock

    def collect(self) -> Iterable[Metric]:
        return families(self.docs(), self.clock())


def registry_for(docs: Any, clock: Any) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(DocsCollector(docs, clock))
    return reg


def exposition(docs: Sequence[dict[str, Any]], now: float) -> bytes:
    """The OpenMetrics text of ``docs`` (ends with ``# EOF``)."""
    return bytes(generate_latest(registry_for(lambda: docs, lambda: now)))
