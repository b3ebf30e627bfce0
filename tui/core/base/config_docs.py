"""What each table and key of the config file means, for docs/reference/config.md.

config_keys.py knows the shape, the code's dataclasses the defaults; this module holds the one
sentence a user reads for each table and key (tools/gen_reference.py puts the three together,
and a test holds this list equal to config_keys' tables and keys).
"""

from __future__ import annotations

# A table's meaning, by its name as written in the file.
TABLES: dict[str, str] = {
    "host": "One machine to supervise (omitted: this machine). Use [host] or [[hosts]], not both.",
    "hosts": "Several machines, one [[hosts]] entry each; --host LABEL or ADDRESS selects one, "
    "a job name all its members.",
    "topology": "Which GPUs hold the frozen target's workers and which the drafter replicas.",
    "run": "The run: its command, where and with what environment it starts, what is watched.",
    "restart": "Auto-restart after a crash (opt-in: --auto-restart, A in the app, or auto) "
    "and how many run directories are kept.",
    "alerts": "Alerts sent by `dflash-tui supervise` (and the app's terminal notification). "
    "A notifier that fails or hangs is logged and never stops supervision.",
    "record": "The flight recorder: every sample, finding, event and log line of a run, "
    "to <run_dir>/record/.",
    "thresholds": "The diagnosis' settings; each a number.",
    "keys": "The app's keys: binding id = key (a key name like x, X, ctrl+r, f5, or one "
    'character), or several ("ctrl+r,f5"). A key another binding keeps is refused at start.',
    "scheduler": 'Who starts the run, for every host without its own: "direct" (default) or '
    '"slurm" (docs/slurm.md).',
    "slurm": 'How a run is submitted to Slurm when `scheduler = "slurm"` (docs/slurm.md); '
    "each value reaches sbatch as an argument of its own.",
    "jobs": "[jobs.NAME]: the rendezvous of the [[hosts]] entries that share `job = NAME` "
    "(one run across hosts, torchrun --nnodes).",
}

# A key's meaning, by its dotted path ([host] and [[hosts]] share theirs as "host.KEY").
KEYS: dict[str, str] = {
    "host.address": "ssh-config alias or [user@]host[:port]; omitted: this machine.",
    "host.container": '"pct:ID" (Proxmox), "docker:NAME", or a template with {cmd} once, '
    "as a word of its own.",
    "host.label": "Its name on screen and for --host (default: the address, or local).",
    "host.job": "[[hosts]] only: entries sharing this name are one run across hosts.",
    "host.scheduler": '"direct" (default: started here or over SSH) or "slurm" (submitted '
    "with sbatch from this host, the login node).",
    "host.slurm": "The host's own [slurm], replacing the top-level one as a whole.",
    "host.topology": "The host's own [topology], replacing the top-level one as a whole.",
    "host.run": "The host's own [run], replacing the top-level one as a whole.",
    "host.restart": "The host's own [restart], replacing the top-level one as a whole.",
    "slurm.partition": "The partition (sbatch --partition); omitted: the cluster's default.",
    "slurm.nodes": "Nodes to allocate (sbatch --nodes); default 1.",
    "slurm.gpus_per_node": "GPUs per node (sbatch --gres=gpu:N); default 8.",
    "slurm.account": "The account to charge (sbatch --account).",
    "slurm.qos": "The quality of service (sbatch --qos).",
    "slurm.time": "The time limit in Slurm's format (sbatch --time), e.g. 2-00:00:00.",
    "slurm.job_name": 'The job\'s name (sbatch --job-name); default "dflash".',
    "slurm.sbatch_args": "More sbatch arguments, a list of strings, each passed as one argument.",
    "slurm.node_access": '"srun" (default: the probe starts inside the allocation with srun '
    '--overlap) or "ssh" (each node over SSH).',
    "topology.target": "GPU indices of the frozen target's workers.",
    "topology.drafter": "GPU indices of the drafter replicas.",
    "run.command": "The run command, started by a shell in its own process group.",
    "run.workdir": "Where the command starts (default: where the launcher runs).",
    "run.env": "A table of environment variables set for the job.",
    "run.logs": "Logs watched besides the run's own log (paths on the host).",
    "run.run_root": "Where run directories live, on the machine of the job (its shell expands ~).",
    "run.compile_cache": "A compile cache folder, cleared on restart with --clear-cache.",
    "restart.auto": "Restart after a crash without being asked.",
    "restart.success_codes": "Exit codes that are not crashes.",
    "restart.retries": "Restarts after consecutive crashes; one more crash is FATAL.",
    "restart.backoff_s": "Seconds before the first restart; doubles each time ...",
    "restart.max_backoff_s": "... up to this many seconds.",
    "restart.stable_s": "A run up this long was healthy: the crash count starts again.",
    "restart.keep_runs": "Prune older run directories beyond this many at a launch (0 keeps all).",
    "alerts.command": "A command run with the alert as JSON on stdin, DFLASH_ALERT_* set.",
    "alerts.webhook": "A URL the alert is POSTed to as JSON (ntfy and Slack webhooks take it).",
    "alerts.topic": "ntfy's topic field.",
    "alerts.on": "The codes that send an alert.",
    "alerts.min_interval_s": "Seconds between two alerts of one code: a number, or a table by "
    "code with a default key.",
    "alerts.log_lines": "The run's last log lines attached to an alert.",
    "alerts.timeout_s": "A notifier that takes longer is given up on.",
    "alerts.terminal": 'The app rings its terminal: "bell", "osc9", "osc777", or "off".',
    "record.enabled": "false: nothing is recorded.",
    "record.max_mib": "Per run: past it, older segments keep one sample in N.",
    "record.segment_s": "A new segment file every this many seconds.",
    "thresholds.startup_grace_s": (
        "A live run's GPUs are not idle this long after its launch before its first step."
    ),
    "thresholds.near_zero_mib": 'GPU memory at or below this (MiB) is "no memory used".',
    "thresholds.high_util_pct": 'Utilisation at or above this (%) is "busy".',
    "thresholds.activity_util_pct": "Above this (%), or memory used, is activity on a GPU.",
    "thresholds.near_oom_fraction": "GPU memory used / total at or above this is near-oom.",
    "thresholds.throttle_mask": "Clock event reason bits that are a real slowdown.",
    "thresholds.persist_s": "A reading-based finding must hold this long (live).",
    "thresholds.no_progress_factor": "no-progress: no step for this many usual step times ...",
    "thresholds.no_progress_min_s": "... and at least this long.",
    "thresholds.start_window_s": "A run is starting this long after launch.",
    "thresholds.log_grace_s": "A live run's missing log is an error after this long.",
    "thresholds.host_mem_low_fraction": "host-memory-low: MemAvailable below this of MemTotal ...",
    "thresholds.swap_used_fraction": "... or swap used above this of SwapTotal.",
    "thresholds.disk_low_fraction": "disk-low: free space or inodes below this fraction ...",
    "thresholds.disk_full_horizon_s": "... or full within this long at the recent rate.",
    "thresholds.checkpoint_stale_s": "checkpoint-stale: the newest checkpoint older than this.",
    "thresholds.worker_stall_factor": "worker-stalled: this many usual step times ...",
    "thresholds.worker_stall_min_s": "... and at least this long.",
    "keys.launch": "Launch the run.",
    "keys.kill": "Kill the run's process group.",
    "keys.restart": "Kill, wait for GPU memory, launch again.",
    "keys.kill_process": "The process menu for the selected or tagged processes.",
    "keys.auto_restart": "Auto-restart on/off.",
    "keys.refresh": "Sample every host now.",
    "keys.filter": "Edit the log filter.",
    "keys.toggle_filter": "All log lines / the filtered ones.",
    "keys.follow": "Follow the end of the logs.",
    "keys.search": "Search the logs.",
    "keys.search_next": "Next match.",
    "keys.search_previous": "Previous match.",
    "keys.wrap": "Wrap long log lines.",
    "keys.save_view": "Save the log lines shown.",
    "keys.pager": "The whole log in $PAGER.",
    "keys.focus_next": "The next area.",
    "keys.next_theme": "The next theme.",
    "keys.other_tab": "Process tree, timeline, history, GPU process table.",
    "keys.whole_machine": "Tree: the whole machine.",
    "keys.gpu_procs": "The GPU process table.",
    "keys.compact": "GPU grid: one line per GPU.",
    "keys.zoom": "The focused area fills the screen.",
    "keys.help": "The help.",
    "keys.quit": "Quit the app (the run keeps running).",
    "keys.next_host": "The next host (several hosts).",
    "keys.prev_host": "The previous host.",
    "keys.history_zoom": "History tab: zoom.",
    "keys.history_earlier": "History tab: pan earlier.",
    "keys.history_later": "History tab: pan later.",
    "jobs.master_addr": "The rendezvous master (default: the first member's address as the "
    "others reach it).",
    "jobs.master_port": "The rendezvous port.",
}
