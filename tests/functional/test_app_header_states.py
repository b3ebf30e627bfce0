"""Every header state reads as words.

No Python ``None`` or ``nan`` reaches the header in any run state (never launched, starting,
launch failed, running, exited, killed on request, SIGKILLed by nobody we know, vanished,
unknown, auto-restart FATAL, supervised); the fields never run together; the line starts the
same way at every width (a ``run`` prefix came and went); a SIGKILL nobody asked for reads
differently from a kill on request.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from support import until

from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.header import RunHeader
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config
from dflash_tui.core.base.snapshot import Snapshot

T = 1_764_700_000.0
ROOT = "/w/runs"
PROCS = [{"pid": 1, "ppid": 0, "pgid": 1, "sid": 1, "cmd": "/sbin/init", "start_ticks": 5}]
JOB = {
    "pid": 500,
    "ppid": 1,
    "pgid": 500,
    "sid": 500,
    "cmd": "python3 train.py",
    "start_ticks": 900,
}


def run(**kw: Any) -> dict[str, Any]:
    base = {"id": "20261203-070000-ab12", "dir": f"{ROOT}/x", "command": "python3 train.py"}
    return {**base, **kw}


ALIVE = {"pid": 500, "pgid": 500, "start_ticks": 900}
STATES: dict[str, tuple[dict[str, Any] | None, bool]] = {
    "never launched": (None, False),
    "starting": (run(**ALIVE, started_at=T - 1), True),
    "running": (run(**ALIVE, started_at=T - 100), True),
    "launch failed, no pid": (run(launch_error="sh: 1: /usr/bin/pyhton3: not found"), False),
    "launch failed, started": (
        run(started_at=T - 5, launch_error="sh: 1: /usr/bin/pyhton3: not found"),
        False,
    ),
    "launch failed, quick exit": (
        run(**ALIVE, started_at=T - 50, ended_at=T - 49.5, exit_code=2),
        False,
    ),
    "exited 0": (run(**ALIVE, started_at=T - 100, ended_at=T - 10, exit_code=0), False),
    "exited 1": (run(**ALIVE, started_at=T - 100, ended_at=T - 10, exit_code=1), False),
    "killed on request": (
        run(**ALIVE, started_at=T - 100, ended_at=T - 9, exit_code=143, kill_requested_at=T - 10),
        False,
    ),
    "SIGKILLed": (run(**ALIVE, started_at=T - 100, ended_at=T - 9, exit_code=137), False),
    "vanished": (run(**ALIVE, started_at=T - 100), False),
    "no start time": (run(pid=500, pgid=500), True),
}


def snap(record: dict[str, Any] | None, alive: bool, **extra: Any) -> Snapshot:
    d: dict[str, Any] = {
        "time": T,
        "telemetry": {"source": "none", "error": "no NVML and no nvidia-smi on PATH"},
        "procs": PROCS + ([JOB] if alive else []),
        **extra,
    }
    if record is not None:
        d["run"] = record
    return Snapshot.from_dict(d)


def readable(text: str, where: str) -> None:
    """The header's words: no Python leftovers, no two fields glued together."""
    for word in ("None", "nan", "inf"):
        assert not re.search(rf"\b{word}\b", text), f"{where}: {word!r} in {text!r}"
    for glued in (r"\d/\d+[a-z]", r"\d-\d:\d-\d[a-z]", r"\d[a-z]{3,}", r"[a-z]\d+/\d"):
        assert not re.search(glued, text), f"{where}: fields run together in {text!r}"


async def header_texts(s: Snapshot, auto: str = "off") -> dict[int, str]:
    app = DflashApp(Config(), source=ScriptedSource([s]))
    out = {}
    async with app.run_test(size=(200, 40)) as pilot:
        await until(pilot, lambda: app.samples >= 1)
        header = app.screen.query_one(RunHeader)
        if auto != "off":
            header.show_auto(auto)
        for width in (200, 120, 100, 80):
            await pilot.resize_terminal(width, 40)
            await pilot.pause(0.1)
            out[width] = str(header.render())
    return out


@pytest.mark.parametrize("name", list(STATES))
async def test_every_run_state_reads_as_words(name: str) -> None:
    record, alive = STATES[name]
    texts = await header_texts(snap(record, alive))
    for width, text in texts.items():
        readable(text, f"{name} at {width}")
    # The line starts the same way at every width: nothing before the state comes and goes.
    starts = {text.split("  ")[0] for text in texts.values()}
    assert len(starts) == 1 and not texts[80].startswith("run"), texts


async def test_fatal_and_supervised_read_as_words() -> None:
    record, alive = STATES["exited 1"]
    for width, text in (await header_texts(snap(record, alive), auto="fatal")).items():
        readable(text, f"FATAL at {width}")
        assert "FATAL" in text
    sup = {"pid": None, "heartbeat_at": T, "restarts": 2, "mode": "daemon"}
    texts = await header_texts(snap(record, alive, supervisor=sup))
    for width, text in texts.items():
        readable(text, f"supervised at {width}")
    assert "supervised" in texts[200]
    # A supervisor that gave up: its FATAL drawn as the app's own, at every width.
    gave_up = {**sup, "fatal": {"at": T, "restarts": 3, "last_exit": "run r exited (exit 1)"}}
    texts = await header_texts(snap(record, alive, supervisor=gave_up))
    for width, text in texts.items():
        readable(text, f"supervised FATAL at {width}")
        assert " FATAL " in text, (width, text)
    assert "gave up after 3 restarts at" in texts[200] and "auto-restart" not in texts[200]


async def test_a_kill_nobody_asked_for_reads_differently() -> None:
    asked = (await header_texts(snap(*STATES["killed on request"])))[200]
    unasked = (await header_texts(snap(*STATES["SIGKILLed"])))[200]
    assert "KILLED" in asked
    chip = re.match(r" *(\S+)", unasked)
    assert chip and chip.group(1) != "KILLED", unasked
    assert "SIGKILL" in unasked and "not requested" in unasked
