"""K never signals PID 1, a kernel thread, or the chain that carries the supervisor.

Real processes throughout. A case that would kill the test runner (or its shell) if the guard
were missing runs in a child process instead: without the guard the child (or its parent shell)
dies, the test sees it, and nothing else is hit. control.sh's ``pid`` verb refuses on the host
side (over SSH and in containers too); control_pid refuses our own chain early on a plain local
transport.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import busybox_bin, open_kill_process_dialog, until

from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.confirm import ConfirmScreen
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.control.pid import kill_process
from dflash_tui.core.control.script import SCRIPT_PATH
from dflash_tui.core.link.transport import LocalTransport

ROOT = Path(__file__).resolve().parents[2]
PF_KTHREAD = 0x00200000

# kill_process run by a child python: argv PID ("self", "parent" or a number) and TRANSPORT
# ("local", or "wrapped": a wrapper that skips the early check, as a container's would).
CHILD = """
import asyncio, os, sys
from pathlib import Path
from dflash_tui.core.control.pid import kill_process
from dflash_tui.core.link.transport import LocalTransport
arg, how = sys.argv[1], sys.argv[2]
pid = os.getpid() if arg == "self" else os.getppid() if arg == "parent" else int(arg)
ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
t = LocalTransport((lambda c: "exec " + c) if how == "wrapped" else None)
res = asyncio.run(kill_process(t, pid=pid, start_ticks=ticks, grace=0.5, poll=0.05))
print("result", res.refused, res.ok, ",".join(res.signals), res.message, sep="|", flush=True)
"""


def stat(pid: int) -> list[str] | None:
    """The fields after the command name (state first), None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def ticks(pid: int) -> int:
    s = stat(pid)
    assert s is not None
    return int(s[19])


def is_kthread(pid: int) -> bool:
    s = stat(pid)
    return s is not None and bool(int(s[6]) & PF_KTHREAD)


def child_result(out: str) -> list[str]:
    lines = [x for x in out.splitlines() if x.startswith("result|")]
    assert lines, out
    return lines[-1].split("|")[1:]


def run_child(pid: str, how: str, under: str = "") -> subprocess.CompletedProcess[str]:
    """The child python (under ``sh -c`` when ``under`` is set, which then echoes it)."""
    env = {**os.environ, "CHILD": CHILD, "PY": sys.executable}
    argv = [sys.executable, "-c", CHILD, pid, how]
    if under:
        argv = ["sh", "-c", f'"$PY" -c "$CHILD" {pid} {how}; echo "{under} rc=$?"']
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture(params=["sh", "busybox"])
def shell_env(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """The environment for a host-side run: the system sh, or BusyBox applets only on PATH."""
    if request.param == "busybox":
        yield {**os.environ, "PATH": str(busybox_bin(tmp_path))}
    else:
        yield dict(os.environ)


# -- through kill_process (the app's path) --


async def test_pid_1_is_refused_and_untouched() -> None:
    before = stat(1)
    assert before is not None
    res = await kill_process(LocalTransport(), pid=1, start_ticks=ticks(1), grace=0.5, poll=0.05)
    assert res.refused and not res.ok and res.signals == (), res
    assert res.message.startswith("refused: PID 1 is init"), res
    after = stat(1)
    assert after is not None and after[19] == before[19] and after[0] != "Z"


def test_pid_1_of_a_pid_namespace_is_refused() -> None:
    """The same where PID 1 is ours to lose: a shell that is init of a fresh PID namespace."""
    probe = (
        subprocess.run(
            ["unshare", "-p", "-f", "--mount-proc", "true"], capture_output=True, check=False
        )
        if shutil.which("unshare")
        else None
    )
    if probe is None or probe.returncode != 0:
        pytest.skip("no unshare -p here (needs root or user namespaces)")
    env = {**os.environ, "CHILD": CHILD}
    cmd = f'"{sys.executable}" -c "$CHILD" 1 local; echo "init rc=$?"'
    r = subprocess.run(
        ["unshare", "-p", "-f", "--mount-proc", "sh", "-c", cmd],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    refused, ok, signals, message = child_result(r.stdout)
    assert (refused, ok, signals) == ("True", "False", ""), r.stdout
    assert message.startswith("refused: PID 1 is init") and "init rc=0" in r.stdout, r.stdout


def test_own_pid_is_refused_early() -> None:
    r = run_child("self", "local")
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)  # -15: it killed itself
    refused, ok, signals, message = child_result(r.stdout)
    assert (refused, ok, signals) == ("True", "False", ""), r.stdout
    assert "is this app itself" in message, message


def test_own_pid_is_refused_by_the_host_side_too() -> None:
    """A wrapped transport skips the early check: control.sh sees the app as its ancestor."""
    r = run_child("self", "wrapped")
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    refused, ok, signals, message = child_result(r.stdout)
    assert (refused, ok, signals) == ("True", "False", ""), r.stdout
    assert message.startswith("refused: PID ") and "ancestor of the dflash-tui control" in message


@pytest.mark.parametrize("how", ["local", "wrapped"])
def test_ancestor_shell_is_refused(how: str) -> None:
    r = run_child("parent", how, under="shell")
    assert r.returncode == 0 and "shell rc=0" in r.stdout, (r.returncode, r.stdout, r.stderr)
    refused, ok, signals, message = child_result(r.stdout)
    assert (refused, ok, signals) == ("True", "False", ""), r.stdout
    assert "ancestor" in message and message.startswith("refused: PID "), message


async def test_kernel_threads_are_refused() -> None:
    if not is_kthread(2):
        pytest.skip("PID 2 is no kernel thread here (a PID namespace)")
    kids = sorted(
        int(e.name)
        for e in Path("/proc").iterdir()
        if e.name.isdigit() and (s := stat(int(e.name))) and s[1] == "2"
    )
    # A kworker of kthreadd's: one that ignores signals anyway, should the guard be missing.
    kworkers = [p for p in kids if Path(f"/proc/{p}/comm").read_text().startswith("kworker")]
    for pid in [2, *kworkers[:1]]:
        t = ticks(pid)
        res = await kill_process(LocalTransport(), pid=pid, start_ticks=t, grace=0.3, poll=0.05)
        assert res.refused and not res.ok and res.signals == (), (pid, res)
        assert "kernel thread" in res.message, res


async def test_an_ordinary_child_is_still_killed() -> None:
    p = subprocess.Popen(["sleep", "30"])  # our own group and session, as an ordinary job
    try:
        res = await kill_process(LocalTransport(), pid=p.pid, start_ticks=ticks(p.pid), grace=5)
        assert res.ok and not res.refused and res.signals == ("TERM",), res
        assert p.wait(5) == -15
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()


# -- control.sh's pid verb itself, under sh and BusyBox sh --


def pid_verb(shell_cmd: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``sh -c SHELL_CMD``, in a session of its own, with $SCRIPT the control script."""
    return subprocess.run(
        ["sh", "-c", shell_cmd],
        env={**env, "SCRIPT": str(SCRIPT_PATH)},
        capture_output=True,
        text=True,
        timeout=30,
        start_new_session=True,
    )


def test_host_side_refuses_its_parent_shell(shell_env: dict[str, str]) -> None:
    # The outer shell passes its own PID and start time; the control script is its child.
    r = pid_verb(
        'set -- $(cat /proc/$$/stat); sh -s -- pid "$$" "${22}" TERM <"$SCRIPT"; echo "rc=$?"',
        shell_env,
    )
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)  # -15: the shell was killed
    assert "pid_refused PID " in r.stdout and "ancestor" in r.stdout, r.stdout
    assert "rc=3" in r.stdout and "pid_signalled" not in r.stdout, r.stdout


def test_host_side_refuses_its_session_leader(shell_env: dict[str, str], tmp_path: Path) -> None:
    # The control script is orphaned (double fork), so the leader of its group and session is
    # no ancestor of it any more; it is still the app's terminal side, and refused.
    out = tmp_path / "out"
    r = pid_verb(
        "set -- $(cat /proc/$$/stat); "
        '( { sh -s -- pid "$$" "${22}" TERM <"$SCRIPT"; echo "rc=$?"; } >"$OUT" 2>&1 & ); '
        'i=0; while [ $i -lt 200 ] && ! grep -q "rc=" "$OUT" 2>/dev/null; do '
        "sleep 0.05; i=$((i+1)); done; echo leader alive",
        {**shell_env, "OUT": str(out)},
    )
    text = out.read_text() if out.exists() else ""
    assert r.returncode == 0 and "leader alive" in r.stdout, (r.returncode, r.stdout, text)
    assert "pid_refused PID " in text and "leads the process group or session" in text, text
    assert "rc=3" in text, text


def test_host_side_refuses_pid_1(shell_env: dict[str, str]) -> None:
    before = stat(1)
    assert before is not None
    r = pid_verb(
        'set -- $(cat /proc/1/stat); sh -s -- pid 1 "${22}" TERM <"$SCRIPT"; echo "rc=$?"',
        shell_env,
    )
    assert "pid_refused PID 1 is init" in r.stdout and "rc=3" in r.stdout, r.stdout
    after = stat(1)
    assert after is not None and after[19] == before[19]


def test_host_side_still_signals_an_ordinary_process(shell_env: dict[str, str]) -> None:
    p = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        cmd = f'sh -s -- pid {p.pid} {ticks(p.pid)} TERM <"$SCRIPT"; echo "rc=$?"'
        r = pid_verb(cmd, shell_env)
        assert f"pid_signalled TERM {p.pid}" in r.stdout and "rc=0" in r.stdout, r.stdout
        assert p.wait(5) == -15
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()


def test_host_side_rejects_pid_0_and_leading_zeros(shell_env: dict[str, str]) -> None:
    for pid in ("0", "01"):
        r = pid_verb(f'sh -s -- pid {pid} 1 TERM <"$SCRIPT"; echo "rc=$?"', shell_env)
        assert f"error bad pid {pid}" in r.stdout and "rc=2" in r.stdout, r.stdout


# -- the dialog --


def live(host: HostConfig) -> DflashApp:
    return DflashApp(Config(hosts=(host,), interval=0.5))


async def test_app_k_on_pid_1_says_so_and_offers_no_kill(tmp_path: Path) -> None:
    app = live(HostConfig(run_root=str(tmp_path / "runs")))
    before = stat(1)
    async with app.run_test(size=(120, 40)) as pilot:
        body = await open_kill_process_dialog(pilot, app, 1)
        assert "PID 1 is init" in body and "refuses to signal PID 1" in body, body
        assert not app.screen.query("#yes"), "a kill button for a process control refuses"
        await pilot.press("y")  # nothing to confirm: y is no answer here
        await pilot.pause(0.3)
        assert not app.control.waits_active() and not app.control.steps
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
    after = stat(1)
    assert before is not None and after is not None and after[19] == before[19]


async def test_app_k_on_the_app_itself_offers_no_kill(tmp_path: Path) -> None:
    app = live(HostConfig(run_root=str(tmp_path / "runs")))
    async with app.run_test(size=(120, 40)) as pilot:
        body = await open_kill_process_dialog(pilot, app, os.getpid())
        assert "this app itself" in body, body
        assert not app.screen.query("#yes")
        await pilot.press("escape")


async def test_app_k_warns_of_another_users_process(tmp_path: Path) -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to start a process as another user")
    other = pwd.getpwnam("nobody")
    ids = [f"--reuid={other.pw_uid}", f"--regid={other.pw_gid}", "--clear-groups"]
    victim = subprocess.Popen(["setpriv", *ids, "sleep", "300"], start_new_session=True)
    app = live(HostConfig(run_root=str(tmp_path / "runs")))
    try:
        time.sleep(0.1)  # setpriv execs sleep as nobody
        me = pwd.getpwuid(os.geteuid()).pw_name
        async with app.run_test(size=(120, 40)) as pilot:
            body = await open_kill_process_dialog(pilot, app, victim.pid)
            assert f"Warning: it belongs to user nobody, not {me}" in body, body
            await pilot.press("n")
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()
