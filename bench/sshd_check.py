#!/usr/bin/env python3
"""One login through the loopback sshd as the bench sets it up (bench/hosts_cost.py's stand-in,
fake NVML): what a session sees (python3, PATH, which pynvml), and the sshd's own log when the
login fails. A first look on a machine where the sshd is carried (bench/device_scale.sh): a
failed login there otherwise shows only as "unreachable" hosts, the sshd's log removed.

    python3 bench/sshd_check.py
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests"), str(ROOT / "tests" / "integration")]

import asyncssh  # noqa: E402
from hosts_cost import stand_in_sshd  # noqa: E402
from loopback_sshd import SSHD, LoopbackSshd, sshd_unavailable  # noqa: E402

SESSION = (
    "echo shell=$0 PATH=$PATH; command -v python3 && python3 -V; "
    "python3 -c 'import pynvml; pynvml.nvmlInit(); "
    'print(pynvml.__file__, pynvml.nvmlDeviceGetCount(), "GPUs")\'; '
    "command -v nvidia-smi; echo LD_LIBRARY_PATH=${LD_LIBRARY_PATH-unset}"
)


async def login(server: LoopbackSshd) -> str:
    async with server.login() as conn:
        res = await conn.run(SESSION, timeout=30)
        return f"exit {res.exit_status}\n{res.stdout}{res.stderr}"


def main() -> int:
    why = sshd_unavailable()
    if why:
        print(f"sshd_check: {why}", file=sys.stderr)
        return 2
    print(f"sshd: {SSHD}")
    with stand_in_sshd("sshd-check-", "nvml", 1) as (_, server):
        try:
            print(asyncio.run(login(server)))
        except (OSError, asyncssh.Error) as exc:
            print(f"login failed: {exc!r}\n--- sshd log ---\n{server.log.read_text()[-4000:]}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
