"""``dflash-tui wait`` over a host whose sampling raises: the exception is a note on stderr
(made safe, capped), the host is followed again, and the wait ends as its contract says: 0 when
the outcome is reached after all, 124 at ``--timeout`` with the failure as the host's line.

Hosts of this machine, each with its own run root, sampled by the real in-process probe (the
stand-in nvidia-smi gives the GPUs); a real run launched by ``dflash-tui launch``. The failure
is an exception raised from the diagnosis of a sample: a bug in reading one host's sample,
whatever it is, is what the wait must outlive.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fakes.scenario import FakeSmi
from wait_util import cli

from dflash_tui.cli import follow, wait
from dflash_tui.cli.until import Until
from dflash_tui.core.base.config import load_file
from dflash_tui.core.base.config_types import Config
from dflash_tui.core.base.timings import START_WINDOW_S

INTERVAL = 0.3
ESCAPE = "\x1b]0;PWNED\x07\x1b[2J"
LONG = "x" * 5000  # past any cap


def config(tmp_path: Path, labels: tuple[str, ...]) -> Config:
    path = tmp_path / "hosts.toml"
    lines = []
    for label in labels:
        lines += ["[[hosts]]", f'label = "{label}"', "[hosts.run]"]
        lines += [f'run_root = "{tmp_path / label}"', ""]
    path.write_text("\n".join(lines))
    return replace(load_file(path), interval=INTERVAL)


def failing(monkeypatch: pytest.MonkeyPatch, fails: Any) -> dict[str, int]:
    """``status_doc`` raising on the samples ``fails(label, n)`` names; the calls per host."""
    real, calls = follow.status_doc, {}

    def status_doc(host: Any, *args: Any) -> Any:
        calls[host.label] = calls.get(host.label, 0) + 1
        if fails(host.label, calls[host.label]):
            raise RuntimeError(f"boom {ESCAPE}\nsecond line {LONG}")
        return real(host, *args)

    monkeypatch.setattr(follow, "status_doc", status_doc)
    return calls


def test_a_hosts_failure_is_a_note_and_the_wait_reaches_its_outcome(
    tmp_path: Path, fake_smi: FakeSmi, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    cfg = config(tmp_path, ("h0", "h1"))
    for label in ("h0", "h1"):
        root = ["--run-root", str(tmp_path / label)]
        launched = cli("launch", *root, "--command", f"sleep {START_WINDOW_S + 2}")
        assert launched.returncode == 0, launched.stdout + launched.stderr
    calls = failing(monkeypatch, lambda label, n: label == "h1" and n == 2)
    rc = asyncio.run(wait._wait(cfg, Until("exited"), 60.0, False))
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    lines = out.splitlines()
    assert [ln.split(": ", 1)[0] for ln in lines] == ["h0", "h1"], out
    assert all(ln.split(": ", 1)[1].startswith("exited reached: ") for ln in lines), out
    assert all("exit 0" in ln for ln in lines), out
    (note,) = err.splitlines()
    assert note.startswith("h1: sampling failed: RuntimeError: boom "), note
    assert "\x1b" not in err and "\x07" not in err and "second line" in note
    assert len(note) < follow.FAILURE_CAP + 100, len(note)
    assert calls["h1"] >= 3  # followed again after the failure


def test_a_host_that_keeps_failing_is_the_timeouts_line(
    tmp_path: Path, fake_smi: FakeSmi, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    cfg = config(tmp_path, ("h1",))
    calls = failing(monkeypatch, lambda label, n: True)
    rc = asyncio.run(wait._wait(cfg, Until("first-step"), 4.0, False))
    out, err = capsys.readouterr()
    assert rc == wait.TIMED_OUT, out + err
    (line,) = out.splitlines()
    assert line.startswith("timed out after 4 s: unreachable: h1: sampling failed: RuntimeError")
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert len(line) < follow.FAILURE_CAP + 100, len(line)
    # tried again with a growing pause (1, 2 s) within the timeout, each failure noted
    assert calls["h1"] >= 2 and len(err.splitlines()) == calls["h1"], err
