"""``status --watch`` over several hosts: an exception while sampling one host is that host's
line (``unreachable: HOST: sampling failed: ...``, made safe), the host is followed again, and
the other hosts' lines go on; the watch ends only when stopped.

Two hosts of this machine, each with its own run root, sampled by the real in-process probe
(the stand-in nvidia-smi gives the GPUs). The failure is one exception raised from the
diagnosis of one of h1's samples: a bug in reading one host's sample, whatever it is, is what
the watch must outlive.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fakes.scenario import FakeSmi

from dflash_tui.cli import follow, watch
from dflash_tui.core.base.config import load_file

INTERVAL = 0.3
WATCH_S = 6.0  # the failure comes at h1's second sample; its retry a second after
ESCAPE = "\x1b]0;PWNED\x07\x1b[2J"


def config(tmp_path: Path) -> Path:
    path = tmp_path / "hosts.toml"
    lines = []
    for label in ("h0", "h1"):
        lines += ["[[hosts]]", f'label = "{label}"', "[hosts.run]"]
        lines += [f'run_root = "{tmp_path / label}"', ""]
    path.write_text("\n".join(lines))
    return path


def test_one_hosts_failure_is_its_line_and_the_watch_goes_on(
    tmp_path: Path, fake_smi: FakeSmi, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    cfg = replace(load_file(config(tmp_path)), interval=INTERVAL)
    assert [h.label for h in cfg.hosts] == ["h0", "h1"]
    real, calls = follow.status_doc, {"h0": 0, "h1": 0}
    failed_at: list[float] = []
    h0_after: list[float] = []

    def status_doc(host: Any, *args: Any) -> Any:
        calls[host.label] += 1
        if host.label == "h1" and calls["h1"] == 2:
            failed_at.append(time.monotonic())
            raise RuntimeError(f"boom {ESCAPE}\nsecond line")
        if host.label == "h0" and failed_at:
            h0_after.append(time.monotonic())
        return real(host, *args)

    monkeypatch.setattr(follow, "status_doc", status_doc)

    async def main() -> tuple[int, float]:
        asyncio.get_running_loop().call_later(WATCH_S, os.kill, os.getpid(), signal.SIGINT)
        t0 = time.monotonic()
        rc = await watch._watch(cfg, watch.PROGRESS_EVERY_S)
        return rc, time.monotonic() - t0

    rc, took = asyncio.run(main())
    out = capsys.readouterr().out
    assert rc == 0
    assert took >= WATCH_S - 0.5, f"the watch ended after {took:.1f} s:\n{out}"
    assert failed_at, out
    lines = out.splitlines()
    failure = [
        ln for ln in lines if " h1 unreachable: h1: sampling failed: RuntimeError: boom" in ln
    ]
    assert len(failure) == 1, out
    assert "\x1b" not in out and "\x07" not in out and "second line" in failure[0]
    # h1 is followed again and comes back; h0 was sampled all along.
    assert any(" h1 reachable again" in ln for ln in lines[lines.index(failure[0]) :]), out
    assert len(h0_after) >= 3, f"h0 sampled {len(h0_after)} times after h1 failed"
    assert calls["h1"] >= 3


async def test_a_follow_loop_that_fails_ends_the_watch_with_1_and_says_why(capsys: Any) -> None:
    """A host's follow loop that itself raised (not a sampling error, which is the host's line)
    is not a clean end: exit 1 and one safe line on stderr. The reader leaving is exit 0."""

    async def fails() -> None:
        raise RuntimeError(f"defect {ESCAPE}")

    async def reader_left() -> None:
        raise BrokenPipeError

    failed, left = asyncio.create_task(fails()), asyncio.create_task(reader_left())
    await asyncio.gather(failed, left, return_exceptions=True)
    assert watch._ended({left}) == 0
    assert watch._ended({failed, left}) == 1
    err = capsys.readouterr().err
    assert "stopped: RuntimeError: defect" in err and "\x1b" not in err
