"""dflash-train's command line: bad input is one clear line and exit 2, before torch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from dflash_train.cli import parse_fault, resolve
from dflash_train.events import format_step
from dflash_train.jsonl import DataError, read_jsonl
from dflash_train.usage import UsageError

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, tmp: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    events = tmp / "events.jsonl"
    cmd = [sys.executable, "-m", "dflash_train.train", *args, "--events", str(events)]
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
    from dflash_train import train

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    s = resolve(["--target-gpus", "0", "--drafter-gpus", "1,7"], environ={})
    with pytest.raises(UsageError, match=r"GPU index 7 does not exist: 2 CUDA device\(s\)"):
        train._check_devices(s)


def test_device_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    """No flags: CUDA with compiled flex where torch sees it, else the CPU with the dense mask;
    an explicit GPU list never silently becomes the CPU."""
    torch = pytest.importorskip("torch")
    from dflash_train import train

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
    from dflash_tui.core.diagnosis.progress import Metric, parse_line

    assert parse_line(line) == Metric(120, 2.31, 0.41, 2810.0)


def test_light_modules_never_import_torch() -> None:
    code = (
        "import sys, dflash_train, dflash_train.topology, dflash_train.cli, dflash_train.events, "
        "dflash_train.jsonl, dflash_train.presets, dflash_train.train\n"
        "sys.exit(1 if 'torch' in sys.modules else 0)\n"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0


def _bare(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple:
    """dflash-train with no --events and no DFLASH_* variables: (result, torch imported?)."""
    cmd = [sys.executable, "-X", "importtime", "-m", "dflash_train.train", *args]
    base = {k: v for k, v in os.environ.items() if not k.startswith("DFLASH_")}
    full_env = {**base, "PYTHONPATH": str(ROOT), **(env or {})}
    res = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=60, cwd=cwd)
    torch_loaded = any(ln.rstrip().endswith("| torch") for ln in res.stderr.splitlines())
    return res, torch_loaded


def _one_error_before_torch(res: subprocess.CompletedProcess, torch_loaded: bool) -> str:
    assert res.returncode == 2, res.stdout + res.stderr
    assert not torch_loaded
    (err,) = _errors(res)
    return err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_unwritable_out_dir_is_a_usage_error(tmp_path: Path) -> None:
    err = _one_error_before_torch(*_bare("--out-dir", "/proc/x", cwd=tmp_path))
    assert err.startswith("dflash-train: error: --out-dir /proc/x is not writable (")
    out = tmp_path / "out"
    out.mkdir()
    (out / "checkpoints").write_text("")  # a file where the checkpoints folder goes
    err = _one_error_before_torch(*_bare("--out-dir", str(out), cwd=tmp_path))
    assert f"--out-dir {out} is not writable" in err and "checkpoints" in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["checkpoints", "out"]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_unwritable_events_file_is_a_usage_error(tmp_path: Path) -> None:
    err = _one_error_before_torch(*_bare("--events", "/proc/x/ev.jsonl", cwd=tmp_path))
    assert err.startswith("dflash-train: error: --events /proc/x/ev.jsonl is not writable (")
    err = _one_error_before_torch(*_bare("--events", str(tmp_path), cwd=tmp_path))
    assert "is a directory" in err
    assert list(tmp_path.iterdir()) == []


def test_missing_resume_file_is_a_usage_error(tmp_path: Path) -> None:
    res, torch_loaded = _bare("--resume", str(tmp_path / "nonexist.pt"), cwd=tmp_path)
    err = _one_error_before_torch(res, torch_loaded)
    assert f"--resume {tmp_path / 'nonexist.pt'}: no such file" in err
    assert list(tmp_path.iterdir()) == []
    s = resolve(["--resume", "auto"], environ={"DFLASH_RUN_DIR": str(tmp_path / "run")})
    assert s.resume == "auto"  # no checkpoint yet: a fresh start, not an error
    assert list(tmp_path.iterdir()) == []  # the write check left nothing behind


def test_data_too_short_for_two_blocks(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("[1, 2]\n\n[3]\n")
    err = _one_error_before_torch(*_bare("--data", str(data), cwd=tmp_path))
    assert err == (
        f"dflash-train: error: {data}: no sample has at least 2 blocks (8 tokens at block 4) "
        "of supervised tokens; 2 samples read"
    )
    data.write_text(json.dumps({"input_ids": list(range(12)), "loss_mask": [0] * 4 + [1] * 8}))
    with pytest.raises(UsageError, match="within --seq-len 8; 1 sample read"):
        resolve(["--data", str(data), "--seq-len", "8"], environ={})
    assert resolve(["--data", str(data)], environ={}).data  # 8 supervised tokens in seq 64
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"vocab_size": 256}')
    data.write_text('[1, 2]\n{"text": "only the tokenizer knows"}\n')  # counted after torch
    assert len(resolve(["--target-model", str(model), "--data", str(data)], {}).data) == 2


def test_generated_samples_too_short_for_two_blocks() -> None:
    with pytest.raises(UsageError, match=r"leaves 4 generated tokens .* fewer than 2 blocks"):
        resolve(["--seq-len", "8", "--block-size", "4"], environ={})
    with pytest.raises(UsageError, match="--gen-samples 0 generates nothing"):
        resolve(["--gen-samples", "0"], environ={})


def test_text_too_short_once_tokenized(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Text is counted after tokenizing (dflash_train.build); still one line and exit 2."""
    pytest.importorskip("torch")
    import types

    from dflash_train import train
    from dflash_train.jsonl import DataError, too_short

    def fake_train(*_: object) -> int:  # what dflash_train.build raises once the text is tokenized
        raise DataError(too_short(data, 16, 2, " once tokenized"))

    monkeypatch.setitem(
        sys.modules, "dflash_train.session", types.SimpleNamespace(train=fake_train)
    )
    monkeypatch.setattr(train, "_stack_dumps", lambda: None)  # in-process: no SIGUSR1 handler
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"vocab_size": 256}')
    data = tmp_path / "data.jsonl"
    data.write_text('{"text": "a b"}\n{"prompt": "a", "response": "b"}\n')
    events = tmp_path / "ev.jsonl"
    argv = ["--target-model", str(model), "--data", str(data), "--device", "cpu"]
    argv += ["--target-gpus", "0", "--drafter-gpus", "1", "--out-dir", str(tmp_path / "out")]
    assert train.main([*argv, "--events", str(events)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"dflash-train: error: {data}: no sample has at least 2 blocks (32 tokens at block 16) "
        "of supervised tokens once tokenized; 2 samples read\n"
    )
    kinds = [e["event"] for e in map(json.loads, events.open())]
    assert kinds == ["started", "error", "exit"]


@pytest.mark.parametrize("args", [["--device", "cuda"], ["--steps", "0"]])
def test_usage_error_creates_no_file(args: list[str], tmp_path: Path) -> None:
    """Events wait until the input is checked: no ./dflash-out/events.jsonl for bad input."""
    if args[0] == "--device":
        pytest.importorskip("torch")
    res, _ = _bare(*args, cwd=tmp_path, env={"CUDA_VISIBLE_DEVICES": ""})
    assert res.returncode == 2, res.stderr
    assert res.stdout.startswith("dflash-train starting pid=")
    assert len(_errors(res)) == 1 and "dflash-train: warning" not in res.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "rope",
    [
        {"rope_scaling": {"type": "longrope", "factor": 4.0}},
        {"rope_parameters": {"rope_type": "mrope", "rope_theta": 5e5}},
        {"text_config": {"vocab_size": 256, "rope_scaling": {"rope_type": "su"}}},
    ],
)
def test_a_target_with_unsupported_rope_scaling_is_refused(rope: dict, tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"vocab_size": 256, **rope}))
    res = _run("--target-model", str(model), "--device", "cpu", tmp=tmp_path)
    assert res.returncode == 2, res.stderr
    (err,) = _errors(res)
    assert f"--target-model {model} uses " in err and "rope scaling" in err
    assert "linear, dynamic, yarn, llama3" in err


def test_plain_rope_configs_pass_the_check() -> None:
    from dflash_train.usage import rope_scaling

    assert rope_scaling({"rope_scaling": None, "rope_theta": 1e6}) is None  # Qwen3-8B's
    assert rope_scaling({"rope_parameters": {"rope_type": "default", "rope_theta": 1e6}}) is None
    assert rope_scaling({"rope_scaling": {"type": "yarn"}}) == "yarn"


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv"
)
def test_a_path_we_may_not_look_into_is_a_usage_error() -> None:
    """EACCES while checking (not just "not writable"): one line, exit 2, as another user."""
    top = Path(tempfile.mkdtemp(prefix="dflash-eacces-"))
    try:
        top.chmod(0o755)
        shutil.copytree(ROOT / "dflash", top / "src" / "dflash_train")  # readable by that user
        locked = top / "locked"
        locked.mkdir(mode=0o700)
        as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        train = [
            "/usr/bin/python3",
            "-m",
            "dflash_train.train",
            "--device",
            "cpu",
        ]  # stdlib is enough
        for extra in (["--out-dir", str(locked / "out")], ["--events", str(locked / "e.jsonl")]):
            res = subprocess.run(
                [*as_nobody, *train, *extra], capture_output=True, text=True, timeout=60,
                cwd=top, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(top / "src")},
            )  # fmt: skip
            assert res.returncode == 2, res.stderr
            assert "Traceback" not in res.stderr, res.stderr
            assert _errors(res) == [res.stderr.strip()], res.stderr
    finally:
        shutil.rmtree(top)


@pytest.mark.parametrize(
    ("argv", "asks"),
    [
        (["--help"], True),
        (["-h"], True),
        (["--preset", "tiny", "--he"], True),
        (["--steps", "3"], False),
        (["--", "--help"], False),
        (["--hidden-size", "8"], False),
    ],
)
def test_help_is_told_apart_from_a_start(argv: list[str], asks: bool) -> None:
    from dflash_train.train import _asks_help

    assert _asks_help(argv) is asks
