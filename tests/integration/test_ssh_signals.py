"""The process menu's verbs over SSH (the loopback sshd): which helpers the host has on its
PATH (py-spy appears and goes with the host's PATH, not ours), a real py-spy dump of a real
process, USR1 to a process that traps it, PID 1 refused; every word quoted, never a command
string built from them."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from loopback_sshd import ALIAS, LoopbackSshd

from dflash_tui.core.control.pid import kill_process
from dflash_tui.core.control.pyspy import dump, host_tools
from dflash_tui.core.link.ssh import SshTransport
from dflash_tui.core.link.ssh_connect import SshSettings

PY_SPY = Path(sys.executable).parent / "py-spy"
MARKED = (  # a Python process whose stack names a function of ours
    "def dflash_marker_fn():\n import time\n while True: time.sleep(0.05)\ndflash_marker_fn()\n"
)


def ticks(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


async def test_py_spy_dump_and_usr1_over_ssh(ssh_env: LoopbackSshd, tmp_path: Path) -> None:
    if not PY_SPY.exists():
        pytest.skip("py-spy is not installed beside this python (the test extra has it)")
    link = ssh_env.root / "bin" / "py-spy"  # the sessions' PATH (make_sshd), not this process's
    marker = tmp_path / "usr1"
    target = subprocess.Popen([sys.executable, "-c", MARKED], start_new_session=True)
    trap = f'trap "echo usr1 >> {marker}" USR1; while :; do sleep 0.05; done'
    trapper = subprocess.Popen(["sh", "-c", trap], start_new_session=True)
    t = SshTransport(ALIAS, settings=SshSettings(connect_timeout=5))
    try:
        assert "py-spy" not in await host_tools(t)
        link.symlink_to(PY_SPY)
        assert (await host_tools(t))["py-spy"] == str(link)
        time.sleep(0.2)  # the target reaches its loop
        res = await dump(t, pid=target.pid, start_ticks=ticks(target.pid))
        assert res.ok, res
        assert any("dflash_marker_fn (<string>:3)" in x for x in res.lines), res.lines
        stale = await dump(t, pid=target.pid, start_ticks=ticks(target.pid) + 1)
        assert stale.refused and not stale.lines
        init = await dump(t, pid=1, start_ticks=ticks(1))
        assert init.refused and "PID 1 is init" in init.message
        sent = await kill_process(t, pid=trapper.pid, start_ticks=ticks(trapper.pid), signal="USR1")
        assert sent.ok and sent.signals == ("USR1",)
        for _ in range(100):
            if marker.exists():
                break
            time.sleep(0.05)
        assert marker.read_text().split() == ["usr1"]
        assert target.poll() is None and trapper.poll() is None
    finally:
        link.unlink(missing_ok=True)
        await t.close()
        for p in (target, trapper):
            p.kill()
            p.wait()
