"""The auto-restart loop going on from an earlier loop's policy state (``machine=``, what the
app hands a supervisor turned on while the one turned off ends): a restart that state still
holds pending was said by the earlier loop, and is not said again. A real crashed run under a
temporary run root, read through the local transport."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.timings import RestartPolicy
from dflash_tui.core.control import scheduled
from dflash_tui.core.control.launch import launch
from dflash_tui.core.control.policy import AutoRestart, Decision
from dflash_tui.core.control.restart import supervise
from dflash_tui.core.link.connect import make_transport

POLICY = RestartPolicy(enabled=True, retries=2, backoff_s=30.0, max_backoff_s=30.0)


async def test_a_restart_still_pending_is_not_said_again(tmp_path: Path) -> None:
    host = HostConfig(command="echo step=1 loss=1 tok/s=1; exit 3", run_root=str(tmp_path))
    transport = make_transport(host)
    try:
        started = await launch(transport, host, start_window=0.5)
        assert started.run_id is not None, started.message
        machine = AutoRestart(POLICY)
        machine.since = 0.0  # watching since before the run: its crash is judged
        decision = Decision("watch", "")
        for _ in range(100):  # the earlier loop: the crash seen, a restart due in 30 s
            rep = await scheduled.latest_run(transport, host)
            now = rep.now if rep.now is not None else time.time()
            decision = machine.observe(rep.record, rep.state(0.5), now)
            if decision.action == "restart":
                break
            await asyncio.sleep(0.1)
        assert decision.action == "restart" and machine.pending() is not None
        said: list[Decision] = []
        stop = asyncio.Event()
        loop = asyncio.create_task(
            supervise(
                transport,
                host,
                POLICY,
                stop,
                on_decision=said.append,
                machine=machine,
                start_window=0.5,
                poll=0.1,
            )
        )
        await asyncio.sleep(1.0)  # ten polls, each reading the same pending restart
        stop.set()
        await loop
        assert said == []
        assert [p for p in tmp_path.iterdir() if not p.name.startswith(".")] == [
            tmp_path / started.run_id
        ]  # nothing relaunched: the restart is 30 s away
    finally:
        await transport.close()
