"""The run directory: file names and the pure rules that read a run's state back.

The layout is in docs/internals.md. Reading happens where the run lives (the probe, or
tui/core/control.sh for control); these functions judge what was read, so local, SSH and
container runs share one rule. Also here, because it is pure: the auto-restart policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tui.core.snapshot import Proc, RunRecord

RUN_STATES = ("none", "starting", "running", "exited", "killed", "launch-failed")
DEFAULT_START_WINDOW = 3.0  # seconds a job must stay up to count as started (supervisord startsecs)
ALIVE_STATES = ("starting", "running")


def group_members(run: RunRecord | None, procs: Sequence[Proc]) -> list[Proc]:
    """Live (non-zombie) processes of the run's process group.

    A PGID is reused by the kernel once the group is gone: when the recorded leader is still
    present its start time must match, else nothing of that group is ours. When the leader is
    gone, the members must be in the run's session (the launcher's setsid made SID == PGID) and
    born after the leader; one that is not proves the group is someone else's.
    """
    if run is None or run.pgid is None:
        return []
    members = [p for p in procs if p.pgid == run.pgid and p.state != "Z"]
    leader = next((p for p in procs if p.pid == run.pgid), None)
    if leader is not None:
        if (
            run.start_ticks is not None
            and leader.start_ticks is not None
            and leader.start_ticks != run.start_ticks
        ):
            return []
        return members
    for p in members:
        born_before = (
            run.start_ticks is not None
            and p.start_ticks is not None
            and p.start_ticks < run.start_ticks
        )
        if p.sid != run.pgid or born_before:
            return []
    return members


def run_state(
    run: RunRecord | None,
    procs: Sequence[Proc],
    now: float,
    start_window: float = DEFAULT_START_WINDOW,
) -> str:
    if run is None:
        return "none"
    alive = bool(group_members(run, procs))
    if run.launch_error and not alive:  # a job alive despite a reported failure is running
        return "launch-failed"
    if alive:
        if run.started_at is not None and now - run.started_at < start_window:
            return "starting"
        return "running"
    if run.exit_code is None:
        # No pid file yet: the launcher is still setting the job up (it writes launch_error
        # itself if the job never starts). A recorded group gone with no exit code was killed.
        # The wrapper writes pid before started_at, so a start time without a readable pid
        # file is a broken record, not a start in progress (it would say "starting" forever).
        if run.pgid is None:
            return "starting" if run.started_at is None else "launch-failed"
        return "killed"
    quick = (
        run.started_at is not None
        and run.ended_at is not None
        and run.ended_at - run.started_at < start_window
    )
    if run.exit_code != 0 and quick and run.kill_requested_at is None:
        return "launch-failed"
    return "killed" if run.exit_code >= 128 else "exited"


SIGNALS = {1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}


def exit_meaning(code: int | None) -> str:
    """What an exit code usually means, for people reading a crash."""
    if code is None:
        return "no exit code recorded: the process group vanished (killed)"
    if code == 0:
        return "success"
    if code == 137:
        return "SIGKILL (often the kernel's OOM killer, or a kill -9)"
    if code >= 128:
        sig = code - 128
        return f"killed by signal {sig} ({SIGNALS.get(sig, 'signal')})"
    if code == 127:
        return "command not found"
    if code == 126:
        return "command not executable"
    if code == 1:
        return "error (see the log's last lines)"
    return f"exited with status {code}"


# ---- what tui/core/control.sh prints: `key value` lines -------------------------------------


@dataclass(frozen=True)
class RunReport:
    """One reading of a run directory by control.sh, plus what the verb did."""

    now: float | None = None  # the clock of the machine where the run lives
    record: RunRecord | None = None
    verdict: str = "none"  # none | gone | ours | reused (is the recorded PGID still the run's?)
    members: tuple[Proc, ...] = ()
    log_tail: tuple[str, ...] = ()
    launched: str | None = None
    alive: str | None = None  # launch refused: this run is alive
    pruned: tuple[str, ...] = ()
    signalled: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    facts: dict[str, str] = field(default_factory=dict)  # cleared/absent (compile cache)

    def state(self, start_window: float = DEFAULT_START_WINDOW) -> str:
        now = self.now if self.now is not None else 0.0
        return run_state(self.record, self.members, now, start_window)


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _int(parts: list[str], i: int) -> int | None:
    return int(parts[i]) if len(parts) > i and parts[i].isdigit() else None


def _member(text: str) -> Proc | None:
    parts = text.split(" ", 6)
    if len(parts) < 6 or not all(x.isdigit() for x in parts[:4] + parts[5:6]):
        return None
    pid, ppid, pgid, sid, ticks = (int(x) for x in (*parts[:4], parts[5]))
    comm = parts[6] if len(parts) > 6 else ""
    return Proc(pid, ppid, pgid, sid, parts[4], ticks, None, None, "", comm)


def _record(rid: str | None, rdir: str | None, files: dict[str, str], err: list[str]) -> RunRecord:
    pid = files.get("pid", "").split()
    ex = files.get("exit", "").split()
    rdir = rdir or ""
    return RunRecord(
        id=rid or rdir.rsplit("/", 1)[-1],
        dir=rdir,
        command=files.get("command"),
        pid=_int(pid, 0),
        pgid=_int(pid, 1),
        start_ticks=_int(pid, 2),
        started_at=_float(files.get("started_at")),
        exit_code=_int(ex, 0),
        ended_at=_float(ex[1]) if len(ex) > 1 else None,
        launch_error="\n".join(err) if err else None,
        kill_requested_at=_float(files.get("kill_requested")),
        log_path=f"{rdir}/output.log",
        events_path=f"{rdir}/events.jsonl",
    )


def parse_report(text: str) -> RunReport:
    """Parse control.sh's output; unknown or malformed lines are ignored."""
    vals: dict[str, str] = {}
    files: dict[str, str] = {}
    lists: dict[str, list[str]] = {k: [] for k in ("launch_error", "log", "pruned", "error")}
    signalled: list[str] = []
    members: list[Proc] = []
    for line in text.splitlines():
        key, _, rest = line.partition(" ")
        if key == "file":
            name, _, value = rest.partition(" ")
            files[name] = value
        elif key == "member":
            m = _member(rest)
            if m is not None:
                members.append(m)
        elif key in lists:
            lists[key].append(rest)
        elif key == "signal_error":
            lists["error"].append(f"kill: {rest}")
        elif key == "signalled":
            signalled.append(rest.split(" ")[0])
        elif key in ("now", "id", "dir", "verdict", "launched", "alive", "cleared", "absent"):
            vals[key] = rest
    record = None
    if "dir" in vals:
        record = _record(vals.get("id"), vals["dir"], files, lists["launch_error"])
    return RunReport(
        now=_float(vals.get("now")),
        record=record,
        verdict=vals.get("verdict", "none"),
        members=tuple(members),
        log_tail=tuple(lists["log"]),
        launched=vals.get("launched"),
        alive=vals.get("alive"),
        pruned=tuple(lists["pruned"]),
        signalled=tuple(signalled),
        errors=tuple(lists["error"]),
        facts={k: vals[k] for k in ("cleared", "absent") if k in vals},
    )


# ---- auto-restart on a crash (opt-in), like supervisord: pure, tested without processes ------


@dataclass(frozen=True)
class RestartPolicy:
    enabled: bool = False
    success_codes: frozenset[int] = frozenset({0})  # exits that are not crashes
    retries: int = 3  # restarts after consecutive crashes; one more crash is FATAL
    backoff_s: float = 2.0  # wait before the first restart; doubles each time
    max_backoff_s: float = 60.0
    stable_s: float = 60.0  # a run up this long was healthy: the crash count starts again
    flap_window_s: float = 300.0  # flapping guard (circus): flap_max restarts in this window
    flap_max: int = 5

    def backoff(self, failures: int) -> float:
        return min(self.backoff_s * 2 ** max(failures - 1, 0), self.max_backoff_s)


@dataclass(frozen=True)
class Decision:
    # off | watch (alive or nothing yet) | restart (at `at`) | done (success) | stopped (asked)
    # | fatal (gave up)
    action: str
    message: str
    at: float | None = None  # when to restart, on the run's clock
    failures: int = 0


class AutoRestart:
    """Decides, from what the run directory says, whether and when to restart a crashed run."""

    def __init__(self, policy: RestartPolicy) -> None:
        self.policy = policy
        self.failures = 0
        self.restarts: list[float] = []
        self._handled: str | None = None
        self._pending: Decision | None = None
        self._fatal: Decision | None = None
        self.since: float | None = None  # first observation, on the run's clock

    def observe(self, run: RunRecord | None, state: str, now: float) -> Decision:
        p = self.policy
        if not p.enabled:
            return Decision("off", "auto-restart is off")
        if self.since is None:
            self.since = now
        if self._fatal is not None:
            return self._fatal
        if run is None or state not in ("exited", "killed", "launch-failed"):
            if run is not None and run.id == self._handled:
                # Judged ended, yet alive now (a transient reading): judge its real end afresh.
                self._handled, self._pending = None, None
            started = run.started_at if run is not None else None
            if state == "running" and started is not None and now - started >= p.stable_s:
                self.failures = 0
            return Decision("watch", f"run {state}", failures=self.failures)
        if run.id == self._handled and self._pending is not None:
            return self._pending
        self._handled = run.id
        self._pending = self._judge(run, state, now)
        return self._pending

    def _judge(self, run: RunRecord, state: str, now: float) -> Decision:
        p = self.policy
        if self._before_us(run):
            # Turning auto-restart on (or opening the app) must not relaunch an old crash.
            return Decision("watch", f"run {run.id} ended before auto-restart was on: left as is")
        if run.kill_requested_at is not None:
            return Decision("stopped", f"run {run.id} was stopped on request: not restarted")
        if state == "exited" and run.exit_code in p.success_codes:
            return Decision("done", f"run {run.id} exited {run.exit_code}: success")
        why = run.launch_error or f"exit {run.exit_code}: {exit_meaning(run.exit_code)}"
        return self._crash(f"run {run.id} {state} ({why})", run.started_at, run.ended_at, now)

    def _before_us(self, run: RunRecord) -> bool:
        since = self.since
        if since is None or run.started_at is None or run.started_at >= since:
            return False
        return run.ended_at is None or run.ended_at < since

    def _crash(self, what: str, started: float | None, ended: float | None, now: float) -> Decision:
        p = self.policy
        if started is not None and ended is not None and ended - started >= p.stable_s:
            self.failures = 0
        self.failures += 1
        recent = [t for t in self.restarts if now - t < p.flap_window_s]
        if self.failures > p.retries:
            self._fatal = Decision(
                "fatal", f"FATAL: {what}; gave up after {p.retries} restarts", None, self.failures
            )
            return self._fatal
        if len(recent) >= p.flap_max:
            self._fatal = Decision(
                "fatal",
                f"FATAL: {what}; flapping: {len(recent)} restarts in {p.flap_window_s:g} s",
                None,
                self.failures,
            )
            return self._fatal
        wait = p.backoff(self.failures)
        at = (ended if ended is not None else now) + wait
        msg = f"{what}; restart {self.failures}/{p.retries} in {wait:g} s"
        return Decision("restart", msg, at, self.failures)

    def restarted(self, now: float) -> None:
        """A launch was made for the pending restart; the next run is judged afresh."""
        self.restarts.append(now)
        self._pending = Decision("watch", "restarted", failures=self.failures)

    def launch_failed(self, now: float, error: str) -> Decision:
        """The restart's launch produced no run (refused, unreachable): count it as a crash."""
        self.restarts.append(now)
        self._pending = self._crash(f"restart failed ({error})", None, None, now)
        return self._pending
