"""``dflash-tui metrics``: the real command serves /metrics on a free
loopback port during a real job (step lines in its log, its process on GPU 1) with the fake
nvidia-smi; urllib scrapes it, prometheus_client's parsers (OpenMetrics and the Prometheus
text format) read it, and the GPU and run series carry the values the GPUs and the job gave.
``status --openmetrics`` prints the same once; a non-loopback bind is refused without
``--allow-remote``; without prometheus-client the command says how to install it."""

from __future__ import annotations

import json
import os
import signal
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.scenario import FakeSmi, app, box, gpu
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
from prometheus_client.parser import text_string_to_metric_families as prom_parse
from supervise_util import cleanup, cli, wait_for
from support import served

pytestmark = pytest.mark.slow
OPENMETRICS = "application/openmetrics-text; version=1.0.0"
JOB = ("for i in 1 2 3 4 5 6; do echo \"step=$i loss=2.$i tok/s=15$i\"; sleep 0.3; done; "
       "exec sleep 300")  # fmt: skip


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    r = tmp_path / "runs"
    yield r
    cleanup(r)


def samples(text: str, parse: Any) -> dict[tuple[str, tuple[Any, ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in parse(text)
        for s in fam.samples
    }


def key(name: str, **labels: str) -> tuple[str, tuple[Any, ...]]:
    return (name, tuple(sorted(labels.items())))


def scrape(url: str, accept: str | None = None) -> tuple[str, str]:
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.headers["Content-Type"], resp.read().decode()


@pytest.fixture
def gpus(fake_smi: FakeSmi, root: Path) -> dict[str, Any]:
    """A real job; the fake GPUs: GPU 1 busy with the job's process, GPU 2 hot, GPU 7 used
    by a process outside the run (this test's)."""
    res = cli("launch", "--json", "--run-root", str(root), "--command", JOB, "--start-window", "1")
    run = json.loads(res.stdout)
    assert run["ok"], run
    rows = box(8, busy=[1], mem_used=1002)
    rows[2] = gpu(2, 37, 5000, fields={"temperature.gpu": "81", "power.draw": "412.25"})
    fake_smi.write(rows, [app(run["pid"], 1, 1002), app(os.getpid(), 7, 2000)])
    return {"run": run, "rows": rows}


def test_metrics_serves_the_gpu_and_run_series(root: Path, gpus: dict[str, Any]) -> None:
    argv = ["metrics", "--run-root", str(root), "--interval", "0.5", "--listen", "127.0.0.1:0"]
    with served(argv, r"http://127\.0\.0\.1:\d+/metrics") as url:

        def stepped() -> dict[tuple[str, tuple[Any, ...]], float] | None:
            ctype, text = scrape(url, OPENMETRICS)
            assert ctype.startswith("application/openmetrics-text") and text.endswith("# EOF\n")
            m = samples(text, om_parse)
            running = m.get(key("dflash_run_state", host="local", state="running")) == 1.0
            return m if running and m.get(key("dflash_run_step", host="local"), 0) >= 6 else None

        m = wait_for(stepped, 60, "the job's sixth step in /metrics, past its start window")
        lab = {"host": "local", "gpu": "1", "role": "target"}
        assert m[key("dflash_host_up", host="local")] == 1.0
        assert m[key("dflash_gpu_utilization_percent", **lab)] == 100.0
        assert m[key("dflash_gpu_memory_used_bytes", **lab)] == 1002 * 2**20
        total = float(gpus["rows"][1]["memory.total"])
        assert m[key("dflash_gpu_memory_total_bytes", **lab)] == total * 2**20
        hot = {"host": "local", "gpu": "2", "role": "target"}
        assert m[key("dflash_gpu_temperature_celsius", **hot)] == 81.0
        assert m[key("dflash_gpu_power_watts", **hot)] == 412.25
        assert m[key("dflash_gpu_label", code="ok", **lab)] == 1.0
        other = {"host": "local", "gpu": "7", "role": "drafter"}  # this test's own process
        assert m[key("dflash_gpu_label", code="foreign-process", **other)] == 1.0
        assert m[key("dflash_gpu_label", code="ok", **other)] == 0.0
        assert m[key("dflash_run_state", host="local", state="running")] == 1.0
        assert m[key("dflash_run_loss", host="local")] == pytest.approx(2.6)
        assert m[key("dflash_run_tokens_per_second", host="local")] == 156.0
        assert 0 <= m[key("dflash_run_last_step_age_seconds", host="local")] < 30
        assert m[key("dflash_findings", host="local", severity="error")] >= 0
        ctype, text = scrape(url)  # a plain curl: the Prometheus text format
        assert ctype.startswith("text/plain")
        plain = samples(text, prom_parse)
        assert plain[key("dflash_gpu_utilization_percent", **lab)] == 100.0
        os.killpg(gpus["run"]["pgid"], signal.SIGKILL)  # the run ends: the state follows
        wait_for(
            lambda: samples(scrape(url, OPENMETRICS)[1], om_parse).get(
                key("dflash_run_state", host="local", state="killed")) == 1.0,
            30, "the killed run in /metrics",
        )  # fmt: skip


def test_status_openmetrics_prints_the_same_once(root: Path, gpus: dict[str, Any]) -> None:
    def running() -> dict[tuple[str, tuple[Any, ...]], float] | None:
        res = cli("status", "--openmetrics", "--run-root", str(root))
        assert res.returncode == 0 and res.stdout.endswith("# EOF\n"), res.stderr
        m = samples(res.stdout, om_parse)
        return m if m[key("dflash_run_state", host="local", state="running")] == 1.0 else None

    m = wait_for(running, 30, "the run past its start window")
    assert m[key("dflash_gpu_utilization_percent", host="local", gpu="1", role="target")] == 100
    assert m[key("dflash_run_step", host="local")] >= 1


def test_a_non_loopback_bind_needs_allow_remote(tmp_path: Path) -> None:
    res = cli("metrics", "--run-root", str(tmp_path), "--listen", "0.0.0.0:0")
    assert res.returncode == 2 and "not a loopback address: pass --allow-remote" in res.stderr
    bad = cli("metrics", "--run-root", str(tmp_path), "--listen", "9400")
    assert bad.returncode == 2 and "expected ADDR:PORT" in bad.stderr


def test_without_prometheus_client_it_says_how_to_install(tmp_path: Path) -> None:
    stub = tmp_path / "stub" / "prometheus_client"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('not installed')\n")
    env = dict(os.environ, PYTHONPATH=str(stub.parent))
    for args in (("metrics",), ("status", "--openmetrics")):
        res = cli(*args, "--run-root", str(tmp_path), env=env)
        assert res.returncode == 1 and "pip install 'dflash-tui[metrics]'" in res.stderr
