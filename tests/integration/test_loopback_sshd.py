"""The loopback sshd as a machine without OpenSSH runs it (bench/device_scale.sh): a carried
sshd binary with its own libraries, and what a bare root box lacks made first."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import loopback_sshd
import pytest
from conftest import require_sshd
from loopback_sshd import LoopbackSshd, add_privsep_user, unlock_root

PASSWD = "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n"


def test_privsep_user_added_once_with_a_free_uid(tmp_path: Path) -> None:
    passwd = tmp_path / "passwd"
    passwd.write_text(PASSWD + "a:x:100:100::/:/bin/sh\n")
    assert add_privsep_user(passwd)
    entry = passwd.read_text().splitlines()[-1].split(":")
    assert entry[0] == "sshd" and entry[2] == "101" and entry[5] == "/run/sshd"
    assert not add_privsep_user(passwd)  # already there: left as it is
    names = [line.split(":")[0] for line in passwd.read_text().splitlines()]
    assert names.count("sshd") == 1


def test_locked_root_unlocked_for_keys_only(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow"
    shadow.write_text("root:!:19000:0:99999:7:::\nbob:!:19000::::::\n")
    assert unlock_root(shadow)
    assert shadow.read_text() == "root:*:19000:0:99999:7:::\nbob:!:19000::::::\n"
    assert not unlock_root(shadow)  # "*" is no lock: nothing to change


async def _session_view(server: LoopbackSshd) -> tuple[str, list[str]]:
    """A session's LD_LIBRARY_PATH and, while it is open, the libraries its sshd mapped."""
    async with server.login() as conn:
        res = await conn.run("echo ${LD_LIBRARY_PATH-unset}", timeout=20)
        maps = [Path(f"/proc/{pid}/maps").read_text() for pid in server.sessions()]
    return str(res.stdout).strip(), maps


def test_carried_sshd_loads_its_own_libraries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The named binary runs, its sessions' sshd (re-executed per connection) loads the
    carried library folder, and the shell it starts does not inherit that folder."""
    require_sshd()
    kit = tmp_path / "kit"
    (kit / "lib").mkdir(parents=True)
    sshd = shutil.copy("/usr/sbin/sshd", kit / "sshd")
    zlib = next(p for p in Path("/lib/x86_64-linux-gnu").glob("libz.so.1") if p.exists())
    shutil.copy(zlib, kit / "lib" / "libz.so.1")
    monkeypatch.setattr(loopback_sshd, "SSHD", str(sshd))
    monkeypatch.setattr(loopback_sshd, "SSHD_LIBS", str(kit / "lib"))
    server = LoopbackSshd(tmp_path / "sshd")
    server.start()
    try:
        assert server.proc is not None
        assert Path(f"/proc/{server.proc.pid}/exe").resolve() == Path(sshd)
        env, maps = asyncio.run(_session_view(server))
    finally:
        server.stop()
    assert env == "unset"
    assert maps and all(str(kit / "lib" / "libz.so.1") in m for m in maps)
