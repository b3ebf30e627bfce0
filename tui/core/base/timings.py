"""Control timings and the auto-restart settings: one home for each, used by the command line,
the app and the core alike (pure, stdlib only)."""

from __future__ import annotations

from dataclasses import dataclass

KILL_GRACE_S = 10.0  # seconds between SIGTERM and SIGKILL
START_WINDOW_S = 3.0  # seconds a job must stay up to count as started (supervisord startsecs)
RELEASE_TIMEOUT_S = 60.0  # seconds a restart waits for the old run's GPU memory
LOCK_WAIT_S = 10.0  # seconds a launch waits for another launch's lock
KILL_LOCK_WAIT_S = 2.0  # seconds a kill waits for a launch's lock before leaving it a kill
# A run directory without a pid file and no launcher at work on it is abandoned once older than
# the start window; where the launcher cannot be seen (the probe), after this much more (the
# launcher itself gives a slow wrapper 10 s, then writes launch_error).
LAUNCH_SETUP_S = 12.0
SAMPLE_TIMEOUT_S = 30.0  # seconds one probe sample (``status``) may take before it is given up
HISTORY_REDRAW_S = 5.0  # the History tab's plots are redrawn at most this often (plotext is slow)


@dataclass(frozen=True)
class RestartPolicy:
    """Opt-in auto-restart after a crash, like supervisord (config ``[restart]``)."""

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
