"""The configuration's records: one supervised host (``HostConfig``), one job across hosts
(``JobConfig``) and the whole configuration (``Config``), with the defaults a host gets when
the file and the flags say nothing. Reading the file and merging the flags is config.py's, the
jobs' rules are config_job.py's; both name these records, which import neither."""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field

from dflash_train.topology import Topology
from dflash_tui.core.base.alert_config import AlertSettings
from dflash_tui.core.base.config_keymap import Keymap
from dflash_tui.core.base.config_record import RecordSettings
from dflash_tui.core.base.config_slurm import SlurmConfig
from dflash_tui.core.base.timings import RestartPolicy

# A path on the machine of the job (often another one), expanded by that machine's shell: the
# Linux state folder by convention, not this machine's platformdirs answer.
DEFAULT_RUN_ROOT = "~/.local/state/dflash-tui/runs"
DEFAULT_INTERVAL = 2.0  # seconds between samples
# The bundled tiny pipeline, on the CPU: what a new user sees launched. The tiny preset alone
# is 60 steps (~10 s); the demo runs DEMO_STEPS, long enough to watch, kill and restart.
DEMO_STEPS = 3000
DEFAULT_COMMAND = (
    f"{shlex.quote(sys.executable)} -m dflash_train.train --preset tiny --device cpu "
    f"--steps {DEMO_STEPS}"
)
DEFAULT_MASTER_PORT = 29500  # torchrun's default


@dataclass(frozen=True)
class JobConfig:
    """One job: its name, its members' labels (node rank order) and its rendezvous."""

    name: str
    members: tuple[str, ...]
    master_addr: str
    master_port: int = DEFAULT_MASTER_PORT

    @property
    def nnodes(self) -> int:
        return len(self.members)


@dataclass(frozen=True)
class HostConfig:
    """One supervised machine. ``address`` None means this machine."""

    address: str | None = None
    container: str | None = None  # "pct:ID", "docker:NAME" or a template with {cmd}
    topology: Topology = field(default_factory=Topology)
    command: str = DEFAULT_COMMAND
    workdir: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    logs: tuple[str, ...] = ()
    run_root: str = DEFAULT_RUN_ROOT
    compile_cache: str | None = None
    insecure_accept_new_host_key: bool = False
    restart: RestartPolicy = field(default_factory=RestartPolicy)  # auto-restart (opt-in)
    keep_runs: int = 0  # retention: prune older run directories beyond this many (0 keeps all)
    name: str | None = None  # the config's `label = "..."`
    job: str | None = None  # the config's `job = "..."`: one run across its hosts
    # [thresholds] (top level, for every host): (name, number) pairs over the diagnosis'
    # defaults (tui/core/diagnosis/thresholds.py thresholds_for)
    thresholds: tuple[tuple[str, float], ...] = ()
    scheduler: str = "direct"  # direct | slurm: who starts the run (config_slurm.py)
    slurm: SlurmConfig = field(default_factory=SlurmConfig)  # [slurm]

    @property
    def label(self) -> str:
        """The host's name on screen and for --host: its label, else its address, else local."""
        return self.name or self.address or "local"


@dataclass(frozen=True)
class Config:
    hosts: tuple[HostConfig, ...] = (HostConfig(),)
    interval: float = DEFAULT_INTERVAL
    read_only: bool = False
    theme: str | None = None
    source: str | None = None  # the config file read, if any
    defaults: HostConfig | None = None  # [[hosts]] only: the top-level settings
    notes: tuple[str, ...] = ()  # for the user, said by the front end (stderr)
    alerts: AlertSettings = field(default_factory=AlertSettings)  # [alerts]
    record: RecordSettings = field(default_factory=RecordSettings)  # [record]
    keys: Keymap = ()  # [keys]: binding id -> key(s), the app's keymap (config_keymap.py)
    jobs: tuple[JobConfig, ...] = ()  # [[hosts]] sharing `job = "..."`, with [jobs.NAME]

    @property
    def host(self) -> HostConfig:
        return self.hosts[0]

    @property
    def job(self) -> JobConfig | None:
        """The job the selected hosts are, when they are exactly one job's members."""
        for j in self.jobs:
            if tuple(h.label for h in self.hosts) == j.members:
                return j
        return None
