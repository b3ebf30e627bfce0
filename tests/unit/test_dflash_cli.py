"""dflash-train's command line: bad input is one clear line and exit 2, before torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dflash.cli import UsageError, parse_fault, resolve
from dflash.events import format_step
from dflash.jsonl import DataError, read_jsonl

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, tmp: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    events = tmp / "events.jsonl"
    cmd = [sys.executable, "-m", "dflash.train", *args, "--events", str(events)]
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    full_env.pop("DFLASH_FAULT", None)
    return subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=60, cwd=tmp)


def _errors(res: subprocess.CompletedProcess) -> list[str]:
    return [ln for ln in res.stderr.splitlines() if ln.startswith("dflash-train: error:")]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--target-model", "/no/such/model"], "--target-model /no/such/model does not exist"),
        (["--drafter-gpus", ""], "no drafter GPU"),
        (["--target-gpus", "0-4", "--drafter-gpus", "4-7"], "cannot be both target and drafter"),
        (["--target-gpus", "0-x"], "is not a GPU index"),
        (["--preset", "recipe"], "needs --target-model"),
    ],
)
def test_bad_input_one_line_exit_2(args: list[str], needle: str, tmp_path: Path) -> None:
    res = _run(*args, tmp=tmp_path)
    assert res.returncode == 2, res.stderr
    assert res.stdout.startswith("dflash-train starting pid=")  # first line, before anything
    errs = _errors(res)
    assert len(errs) == 1 and needle in errs[0], res.stderr
    kinds = [e["event"] for e in map(json.loads, (tmp_path / "events.jsonl").open())]
    assert kinds == ["started", "error", "exit"]


def test_malformed_jsonl_names_the_line(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text('[1, 2, 3]\n\n{"input_ids": [4, 5}\n')
    res = _run("--data", str(data), tmp=tmp_path)
    assert res.returncode == 2
    (err,) = _errors(res)
    assert f"{data} line 3: not valid JSON" in err


def test_gpu_index_that_does_not_exist(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    from dflash import train

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    s = resolve(["--target-gpus", "0", "--drafter-gpus", "1,7"], environ={})
    with pytest.raises(UsageError, match=r"GPU index 7 does not exist: 2 CUDA device\(s\)"):
        train._check_devices(s)


def test_device_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    """No flags: CUDA with compiled flex where torch sees it, else the CPU with the dense mask;
    an explicit GPU list never silently becomes the CPU."""
    torch = pytest.importorskip("torch")
    from dflash import train

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    s = train._check_devices(resolve([], environ={}))
    assert (s.device, s.attention, s.drafter_devices()) == ("cpu", "dense", ["cpu"] * 3)
    with pytest.raises(UsageError, match="no CUDA device"):
        train._check_devices(resolve(["--target-gpus", "0", "--drafter-gpus", "1"], {}))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 8)
    s = train._check_devices(resolve([], environ={}))
    assert (s.device, s.attention, s.drafter_devices()) == (
        "cuda",
        "flex",
        ["cuda:5", "cuda:6", "cuda:7"],
    )


def test_no_cuda_is_reported_before_heavy_work(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    res = _run("--target-gpus", "0", "--drafter-gpus", "1", tmp=tmp_path,
               env={"CUDA_VISIBLE_DEVICES": ""})  # fmt: skip
    assert res.returncode == 2
    (err,) = _errors(res)
    assert "no CUDA device is visible" in err and "--device cpu" in err


def test_shared_roles_only_when_allowed() -> None:
    s = resolve(["--target-gpus", "0", "--drafter-gpus", "0", "--allow-shared-gpus"], environ={})
    assert s.target_devices() == ["cuda:0"] and s.drafter_devices() == ["cuda:0"]
    cpu = resolve(["--device", "cpu"], environ={})  # default 0-4 / 5-7 -> 5 + 3 CPU workers
    assert cpu.target_devices() == ["cpu"] * 5 and cpu.drafter_devices() == ["cpu"] * 3
    assert cpu.attention == "dense"


def test_worker_counts_spread_over_gpus() -> None:
    s = resolve(["--target-gpus", "0-1", "--drafter-gpus", "2", "--target-workers", "3"], {})
    assert s.target_devices() == ["cuda:0", "cuda:1", "cuda:0"]
    with pytest.raises(UsageError, match="leaves some of the 2 target GPUs idle"):
        resolve(["--target-gpus", "0-1", "--drafter-gpus", "2", "--target-workers", "1"], {})


def test_defaults_and_events_path(tmp_path: Path) -> None:
    s = resolve([], environ={"DFLASH_RUN_DIR": str(tmp_path)})
    assert s.preset.name == "tiny" and s.topology.spec() == "0-4:5-7"
    assert s.out_dir == tmp_path


def test_fault_spec() -> None:
    f = parse_fault("drafter:1:step:3")
    assert (f.role, f.index, f.step) == ("drafter", 1, 3)
    assert parse_fault("target:0:2").role == "target"
    with pytest.raises(UsageError):
        parse_fault("drafter-1-3")


def test_jsonl_shapes(tmp_path: Path) -> None:
    p = tmp_path / "d.jsonl"
    p.write_text(
        '[1, 2]\n{"input_ids": [3], "loss_mask": [1]}\n{"text": "hi"}\n'
        '{"prompt": "a", "response": "b"}\n'
    )
    recs = read_jsonl(p, have_tokenizer=True)
    assert [r.line for r in recs] == [1, 2, 3, 4]
    with pytest.raises(DataError, match="line 3: text samples need --target-model"):
        read_jsonl(p, have_tokenizer=False)
    p.write_text('{"input_ids": [1, 2], "loss_mask": [1]}\n')
    with pytest.raises(DataError, match="line 1: loss_mask"):
        read_jsonl(p, have_tokenizer=False)


def test_token_ids_outside_the_vocabulary(tmp_path: Path) -> None:
    p = tmp_path / "d.jsonl"
    p.write_text("[1, 2]\n[1, 999]\n")
    with pytest.raises(UsageError, match="line 2: token id 999 is outside"):
        resolve(["--data", str(p)], environ={})


def test_step_line_shape() -> None:
    line = format_step(120, 2.31, 0.41, 2810.4, 6e-4, 2, 1, 1.5, [940.2, 935.0])
    assert line == (
        "step=120 loss=2.3100 acc=0.410 tok/s=2810 lr=6.00e-04 tq=2 dq=1 al=1.50 d_tok/s=940,935"
    )
    from tui.core.metrics import Metric, parse_line

    assert parse_line(line) == Metric(120, 2.31, 0.41, 2810.0)


def test_light_modules_never_import_torch() -> None:
    code = (
        "import sys, dflash, dflash.topology, dflash.cli, dflash.events, dflash.jsonl, "
        "dflash.presets, dflash.train\n"
        "sys.exit(1 if 'torch' in sys.modules else 0)\n"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0
