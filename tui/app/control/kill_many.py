"""Killing several tagged processes at once (the GPU process table's ``space`` then ``K``,
as nvitop does): one confirm names every PID and the signal (the menu's choice,
tui/app/control/signals.py), with those control would refuse listed apart and never sent; then each
is checked against its start time and signalled (or dumped with py-spy) in turn, as ``K``
does for one. A failure on one is reported and the others still go."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from rich.text import Text

from dflash_tui.app.control.bridge import ControlError, StepFn
from dflash_tui.app.host.procs.tree import ProcInfo
from dflash_tui.core.base.text import clean_line, safe_label

UNSEEN = "the probe does not see it (another container's, without a PID mapping)"


class KillsProcesses(Protocol):
    async def kill_process(
        self, pid: int, start_ticks: int | None, step: StepFn, signal: str = ...
    ) -> str: ...


class DumpsProcesses(Protocol):
    async def dump_process(
        self, pid: int, start_ticks: int | None
    ) -> tuple[str, tuple[str, ...]]: ...


def sends(pids: str, grace: float, signal: str) -> str:
    """The confirm's first words: what is sent to ``pids``, and what follows."""
    if signal == "TERM":
        return f"SIGTERM to {pids}, then SIGKILL after {grace:.0f}s if it is still alive."
    if signal == "INT":
        return f"SIGINT to {pids} (as Ctrl-C); nothing more is sent if it keeps running."
    if signal == "KILL":
        return f"SIGKILL to {pids}: it stops at once, without cleaning up."
    if signal == "USR1":
        return (
            f"SIGUSR1 to {pids}: what it does is the program's; a program that does not "
            "handle it ends."
        )
    return f"py-spy dump of {pids}: each thread's Python stack; nothing is signalled."


def refusals(
    infos: Sequence[ProcInfo], unseen: Sequence[int], known: Callable[[int], str | None]
) -> dict[int, str]:
    """PID -> why control would refuse it (PID 1, a kernel thread, ours, no start time)."""
    out = {pid: UNSEEN for pid in unseen}
    for info in infos:
        why = known(info.pid)
        if why is None and info.start_ticks is None:
            why = "its start time is unknown, so it cannot be verified"
        if why is not None:
            out[info.pid] = why
    return out


def many_kill_text(
    sent: Sequence[ProcInfo], refused: dict[int, str], grace: float, signal: str = "TERM"
) -> Text:
    t = Text()
    if sent:
        what = sends(f"each of these {len(sent)} PIDs", grace, signal)
        t.append(what.rstrip(".") + ":\n", style="bold")
        for i in sent:
            gpus = ",".join(str(g) for g in i.gpus) or "-"
            t.append(f"  {i.pid:>7}  {safe_label(i.user, 12):<12} GPU {gpus:<5} ")
            t.append(f"start {i.start_ticks}  {safe_label(i.cmd, 60)}\n")
        t.append(
            "Each is checked first against its start time: a PID that now belongs to another "
            "process is not sent anything. Never by name.\n"
        )
        if any(i.in_run for i in sent):
            t.append("Some are part of the run's group: k kills the whole run.\n", style="bold")
    if refused:
        t.append(f"Not sent ({len(refused)}):\n", style="bold")
        for pid, why in refused.items():
            t.append(f"  {pid:>7}  {safe_label(why, 120)}\n")
    return t


async def kill_each(
    bridge: KillsProcesses, infos: Sequence[ProcInfo], step: StepFn, signal: str = "TERM"
) -> str:
    """Signal each in turn; one line per PID says what happened. One process: its error is
    the action's (the notification says it failed)."""
    if len(infos) == 1:
        return await bridge.kill_process(infos[0].pid, infos[0].start_ticks, step, signal)
    results = []
    for info in infos:
        try:
            results.append(await bridge.kill_process(info.pid, info.start_ticks, step, signal))
        except ControlError as exc:
            results.append(f"PID {info.pid}: {exc}")
    return "\n".join(results)


async def dump_each(
    bridge: DumpsProcesses,
    infos: Sequence[ProcInfo],
    show: Callable[[str, Text], None],
    step: StepFn,
) -> str:
    """py-spy dump of each in turn, all shown in one dialog (``show``); py-spy's lines are
    outside bytes: each is made terminal-safe."""
    body, done = Text(), []
    for info in infos:
        step(f"py-spy dump of PID {info.pid} …")
        try:
            said, lines = await bridge.dump_process(info.pid, info.start_ticks)
        except ControlError as exc:
            said, lines = f"PID {info.pid}: {exc}", ()
        body.append(f"{safe_label(said, 300)}\n", style="bold")
        for line in lines:
            body.append(clean_line(line) + "\n")
        done.append(said)
    where = f"PID {infos[0].pid}" if len(infos) == 1 else f"{len(infos)} processes"
    show(f"py-spy dump of {where}", body)
    return "; ".join(done)
