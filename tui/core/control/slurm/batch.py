"""The run directory of a run under Slurm, and the batch script that sbatch runs.

The run directory has the direct launch's layout (docs/internals.md): ``command``, ``workdir``,
``env``, ``run.sh`` (the same wrapper: it records ``pid``, ``started_at`` and the ``exit``
record) and ``output.log``; beside them ``job.sbatch``, ``slurm_job`` (the job id) and
``slurm_command`` (the command as given, before the per-node wrapping below). The
batch script runs the wrapper on the job's first node and exits with the command's code, so
Slurm's FAILED carries the run's exit code. Across several nodes the command runs once per
node under ``srun``, with the rendezvous of a multi-host job in its environment (MASTER_ADDR is
the first node, NNODES, NODE_RANK); the bundled pipeline becomes a torchrun over them.
"""

from __future__ import annotations

import re
import secrets
import shlex
import time

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.control.script import SCRIPT_PARTS, check_root, check_text, env_text

_WRAPPER = re.compile(r"write_wrapper\(\) \{.*?<<'EOF'\n(.*?)\nEOF\n", re.S)
_BUNDLED = re.compile(r"(^|\s)-m\s+dflash_train\.train(\s|$)")
_TORCHRUN = re.compile(r"torchrun|torch\.distributed\.run")
# torchrun over the allocation: every node one agent, the first node the rendezvous.
TORCHRUN = (
    '-m torch.distributed.run --nnodes "$NNODES" --node-rank "$NODE_RANK" '
    '--master-addr "$MASTER_ADDR" --master-port "$MASTER_PORT" --nproc-per-node 1 '
    "--max-restarts 0 -m dflash_train.train"
)
PER_NODE = 'NODE_RANK=$SLURM_NODEID; export NODE_RANK; exec sh -c "$1"'

BATCH = """#!/bin/sh
# dflash-tui: one run under Slurm (docs/slurm.md). run.sh, the direct launch's wrapper, runs
# the command and writes the exit record; this exits with the command's code for Slurm.
# Its one argument is the run directory.
d=$1
# A start (the first, or a requeued one) clears the last one's end and its kill request.
rm -f "$d/exit" "$d/launch_error" "$d/kill_requested"
if [ "${SLURM_NNODES:-1}" -gt 1 ]; then
  first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
  MASTER_ADDR=$(scontrol -o show node "$first" | sed -n 's/.* NodeAddr=\\([^ ]*\\).*/\\1/p')
  MASTER_ADDR=${MASTER_ADDR:-$first}
  MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))
  NNODES=$SLURM_NNODES
  export MASTER_ADDR MASTER_PORT NNODES
fi
DFLASH_SLURM_JOB=$SLURM_JOB_ID
export DFLASH_SLURM_JOB
# Its own session, as the direct launch starts it: the run's process group is the wrapper's,
# which the probe on each node reads the run's processes by (Slurm tracks them all the same).
setsid sh "$d/run.sh" "$d"
rc=
[ -r "$d/exit" ] && read -r rc _ <"$d/exit"
case $rc in '' | *[!0-9]*) rc=1 ;; esac
exit "$rc"
"""

# Make the run directory, submit, say the job id. Arguments: ROOT ID; the files' contents and
# sbatch's argv come quoted in the text.
# The run root as control.sh reads it (`~`, `$HOME` and `${HOME}` at its start), into $r.
ROOT_SH = """r={root}
case $r in "~" | "~/"*) r=$HOME${{r#"~"}} ;; '$HOME' | '$HOME/'*) r=$HOME${{r#'$HOME'}} ;;
  '${{HOME}}' | '${{HOME}}/'*) r=$HOME${{r#'${{HOME}}'}} ;; esac
"""

SUBMIT = (
    ROOT_SH
    + """mkdir -p "$r" || exit 3
d=$r/{run_id}
mkdir "$d" || exit 3
echo "dir $d"
wd={workdir}
[ -n "$wd" ] || wd=$(pwd)
# A run directory is whole or it is not there (as a direct launch makes it).
if ! {{ : >>"$d/output.log" && printf '%s' {command} >"$d/command" &&
  printf '%s' {given} >"$d/slurm_command" && printf '%s\\n' "$wd" >"$d/workdir" &&
  printf '%s' {env} >"$d/env" && printf '%s\\n' {wrapper} >"$d/run.sh" &&
  printf '%s' {batch} >"$d/job.sbatch"; }}; then
  rm -rf "$d"
  echo "cannot write the run directory $d" >&2
  exit 3
fi
# The job id is the last line sbatch prints on stdout; its warnings go to stderr, which is
# kept apart so that a warning is never taken for the id.
if out=$(sbatch --parsable --output="$d/output.log" --open-mode=append {args} \\
  "$d/job.sbatch" "$d" 2>"$d/sbatch.err"); then
  job=$(printf '%s\\n' "$out" | tail -n 1)
  job=${{job%%;*}}
  printf '%s\\n' "$job" >"$d/slurm_job"
  echo "job $job"
else
  out="$out$(head -c 2000 "$d/sbatch.err")"
  printf '%s\\n' "sbatch: $out" >"$d/launch_error"
  printf 'error sbatch: %s\\n' "$out" | head -c 2000
fi
"""
)


def wrapper_text() -> str:
    """The direct launch's run wrapper (control_launch.sh), one home for what it records."""
    m = _WRAPPER.search(SCRIPT_PARTS[0].read_text())
    if m is None:  # a packaging error, not the user's: say it plainly
        raise RuntimeError("control_launch.sh has no run wrapper")
    return m.group(1)


def new_run_id() -> str:
    """YYYYmmdd-HHMMSS-xxxx (UTC), the direct launch's run id format."""
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.randbelow(0x8000):04x}"


def node_command(command: str, nodes: int) -> str:
    """The command the wrapper runs: itself on one node; across several, once per node under
    srun (the bundled pipeline as torchrun over the allocation)."""
    if nodes <= 1:
        return command
    if _BUNDLED.search(command) and not _TORCHRUN.search(command):
        command = _BUNDLED.sub(lambda m: f"{m.group(1)}{TORCHRUN}{m.group(2)}", command, 1)
    command = command.replace("{node_rank}", '"$NODE_RANK"')
    return (
        f"srun --nodes={nodes} --ntasks-per-node=1 --kill-on-bad-exit=1 "
        f"sh -c {shlex.quote(PER_NODE)} sh {shlex.quote(command)}"
    )


def sbatch_args(host: HostConfig) -> list[str]:
    """sbatch's options from ``[slurm]``, one argument each (the user's sbatch_args last)."""
    s = host.slurm
    args = [f"--job-name={s.job_name}", f"--nodes={s.nodes}", "--ntasks-per-node=1", "--requeue"]
    if s.gpus_per_node:
        args.append(f"--gres=gpu:{s.gpus_per_node}")
    for flag, value in (
        ("partition", s.partition),
        ("account", s.account),
        ("qos", s.qos),
        ("time", s.time),
    ):
        if value:
            args.append(f"--{flag}={value}")
    return args + list(s.sbatch_args)


def submit_script(host: HostConfig, run_id: str, command: str) -> str:
    """The sh text that makes the run directory and submits it; every value quoted."""
    root = check_root(host.run_root)
    workdir = check_text("workdir", host.workdir or "")
    return SUBMIT.format(
        root=shlex.quote(root),
        run_id=shlex.quote(run_id),
        command=shlex.quote(check_text("command", node_command(command, host.slurm.nodes))),
        given=shlex.quote(command),
        workdir=shlex.quote(workdir),
        env=shlex.quote(env_text(host.env)),
        wrapper=shlex.quote(wrapper_text()),
        batch=shlex.quote(BATCH),
        args=shlex.join(sbatch_args(host)),
    )
