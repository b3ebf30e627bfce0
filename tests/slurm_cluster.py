"""A real Slurm cluster on this machine for tests: munged, slurmctld and two slurmds.

Debian's packages (slurmctld, slurmd, slurm-client, munge) run as root from one throwaway
directory: a munge key and socket of their own (the machine's munged, if any, is left alone),
a ``slurm.conf`` and ``gres.conf`` written here, state and spool directories, logs. The two
slurmds are two NodeNames on this host (``n1``, ``n2``), each on its own port with 8 ``gpu``
GRES whose ``File=`` are character devices made with mknod here (a GRES file that is not a
character device makes the node register INVALID). Clients find the cluster through
``SLURM_CONF`` (``Cluster.env``). Every daemon is stopped by the PID this module started.
There is no slurmdbd: ``sacct`` has no accounting storage, as on many small clusters.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

NODES = ("n1", "n2")
GPUS = 8
DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def slurm_unavailable() -> str | None:
    """Why a local Slurm cluster cannot run here (None: it can)."""
    missing = [d for d in DAEMONS if shutil.which(d, path=_sbin_path()) is None]
    if missing:
        return f"{', '.join(missing)} missing: install slurmctld slurmd slurm-client munge"
    if os.geteuid() != 0:
        return "the local Slurm cluster runs its daemons as root"
    return None


def _sbin_path() -> str:
    return f"{os.environ.get('PATH', '')}{os.pathsep}/usr/sbin{os.pathsep}/sbin"


def _which(name: str) -> str:
    path = shutil.which(name, path=_sbin_path())
    if path is None:
        raise RuntimeError(f"{name} is not installed")
    return path


@dataclass
class Cluster:
    """One cluster in ``root``: ``start`` it (<= 30 s), use ``env`` for clients, ``stop`` it."""

    root: Path
    name: str = "dflashtest"
    partition: str = "debug"
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    started_in: float | None = None  # seconds the last start took

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.conf = self.root / "slurm.conf"
        self.socket = self.root / "munge" / "munge.socket"
        self.ctld_port = free_port()
        self.node_ports = {n: free_port() for n in NODES}

    @property
    def env(self) -> dict[str, str]:
        """What a client (sbatch, squeue, dflash-tui) needs to find this cluster."""
        return {"SLURM_CONF": str(self.conf)}

    def log(self, name: str) -> str:
        path = self.root / "log" / f"{name}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    # -- setup ---------------------------------------------------------------------------

    def _write_munge(self) -> None:
        d = self.root / "munge"
        d.mkdir(mode=0o700, exist_ok=True)
        key = d / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
        os.chown(key, 0, 0)
        os.chmod(key, 0o400)

    def _write_devices(self) -> Path:
        dev = self.root / "dev"
        dev.mkdir(exist_ok=True)
        for n in NODES:
            for i in range(GPUS):
                path = dev / f"{n}-gpu{i}"
                if not path.exists():  # /dev/null's numbers: any character device will do
                    os.mknod(path, 0o666 | 0o020000, os.makedev(1, 3))
        return dev

    def _write_conf(self) -> None:
        r = self.root
        for sub in ("state", "log", "run", *(f"spool/{n}" for n in NODES)):
            (r / sub).mkdir(parents=True, exist_ok=True)
        nodes = "\n".join(
            f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={p} CPUs=4 "
            f"RealMemory=1000 Gres=gpu:{GPUS} State=UNKNOWN"
            for n, p in self.node_ports.items()
        )
        self.conf.write_text(
            f"ClusterName={self.name}\n"
            f"SlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={self.ctld_port}\n"
            "SlurmUser=root\nSlurmdUser=root\n"
            f"AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={self.socket},cred_expire=5\n"
            f"StateSaveLocation={r}/state\nSlurmdSpoolDir={r}/spool/%n\n"
            f"SlurmctldPidFile={r}/run/slurmctld.pid\nSlurmdPidFile={r}/run/slurmd-%n.pid\n"
            f"SlurmctldLogFile={r}/log/slurmctld.log\nSlurmdLogFile={r}/log/slurmd-%n.log\n"
            "SlurmctldDebug=info\nSlurmdDebug=info\n"
            "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
            "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nGresTypes=gpu\n"
            "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
            "JobCompType=jobcomp/none\nMailProg=/bin/true\nMpiDefault=none\nReturnToService=2\n"
            "SlurmdParameters=config_overrides\nSchedulerType=sched/builtin\n"
            "SchedulerParameters=sched_interval=1\n"
            "KillWait=2\nInactiveLimit=0\nMinJobAge=600\nMessageTimeout=5\n"
            "SlurmdTimeout=30\nSlurmctldTimeout=30\nLaunchParameters=use_interactive_step\n"
            f"{nodes}\n"
            f"PartitionName={self.partition} Nodes={','.join(NODES)} Default=YES "
            "MaxTime=30 OverTimeLimit=0 State=UP\n"
        )
        dev = self._write_devices()
        (r / "gres.conf").write_text(
            "".join(f"NodeName={n} Name=gpu File={dev}/{n}-gpu[0-{GPUS - 1}]\n" for n in NODES)
        )

    # -- daemons -------------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str]) -> None:
        out = open(self.root / "log" / f"{name}.out", "ab")  # noqa: SIM115 (the child keeps it)
        try:
            self.procs[name] = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env},
                start_new_session=True,
            )
        finally:
            out.close()

    def _start_munge(self, deadline: float) -> None:
        d = self.root / "munge"
        self._spawn(
            "munged",
            [
                _which("munged"), "-F", "-f", f"--socket={self.socket}",
                f"--key-file={d / 'munge.key'}", f"--pid-file={d / 'munged.pid'}",
                f"--log-file={self.root / 'log' / 'munged.log'}",
                f"--seed-file={d / 'munged.seed'}",
            ],
        )  # fmt: skip
        while not self.socket.exists():
            self._check_alive(deadline, "munged")
            time.sleep(0.05)

    def write_config(self) -> None:
        """The key, devices and config files (``start`` writes them too)."""
        self._write_munge()
        self._write_conf()

    def start(self, timeout: float = 30.0) -> float:
        """Start every daemon and wait until both nodes are idle; the seconds it took."""
        t0 = time.monotonic()
        deadline = t0 + timeout
        self.write_config()
        self._start_munge(deadline)
        conf = str(self.conf)
        self._spawn("slurmctld", [_which("slurmctld"), "-D", "-i", "-f", conf])
        for n in NODES:
            self._spawn(f"slurmd-{n}", [_which("slurmd"), "-D", "-N", n, "-f", conf])
        while self.node_states() != dict.fromkeys(NODES, "idle"):
            self._check_alive(deadline, "slurmctld", *(f"slurmd-{n}" for n in NODES))
            time.sleep(0.2)
        self.started_in = time.monotonic() - t0
        return self.started_in

    def _check_alive(self, deadline: float, *names: str) -> None:
        for name in names:
            proc = self.procs[name]
            if proc.poll() is not None:
                self.stop()
                raise RuntimeError(f"{name} exited ({proc.returncode}): {self._logs()}")
        if time.monotonic() > deadline:
            states = self.node_states()
            self.stop()
            raise RuntimeError(f"the cluster did not come up (nodes {states}): {self._logs()}")

    def _logs(self) -> str:
        names = ["munged", "slurmctld", *(f"slurmd-{n}" for n in NODES)]
        return "\n".join(f"--- {n}:\n{self.log(n)}" for n in names)

    def run(self, *argv: str, timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
        """A Slurm client command against this cluster."""
        return subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **self.env},
        )

    def node_states(self) -> dict[str, str]:
        try:
            out = self.run("sinfo", "-h", "-N", "-o", "%N %t", timeout=5).stdout
        except subprocess.TimeoutExpired:
            return {}
        return dict(line.split(None, 1) for line in out.splitlines() if " " in line)

    def reset(self) -> None:
        """Between tests: every job of this (private) cluster cancelled, both nodes resumed."""
        self.run("scancel", "--user=root")
        deadline = time.monotonic() + 30
        while self.run("squeue", "-h", "-o", "%i").stdout.strip():
            if time.monotonic() > deadline:
                raise RuntimeError(f"jobs outlived scancel: {self.run('squeue').stdout}")
            time.sleep(0.2)
        for n, state in self.node_states().items():
            if state != "idle":
                self.run("scontrol", "update", f"nodename={n}", "state=resume")

    def _ours(self) -> list[int]:
        """Live processes this cluster started through its daemons (a slurmstepd outlives its
        slurmd): found by the SLURM_CONF in their environment, never by name."""
        mark = f"SLURM_CONF={self.conf}\0".encode()
        out = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    if mark in (entry / "environ").read_bytes():
                        out.append(int(entry.name))
                except OSError:
                    continue
        return out

    def stop(self) -> None:
        """Cancel every job, TERM every daemon this cluster started (by PID), KILL what
        outlived 10 s, then whatever of its jobs is left (slurmstepd and its children)."""
        if self.procs.get("slurmctld") and self.procs["slurmctld"].poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired, RuntimeError):
                self.reset()  # the jobs end while their slurmds are there to end them
        for proc in reversed(list(self.procs.values())):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        self.procs.clear()
        for pid in self._ours():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
