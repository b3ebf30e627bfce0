"""One probe sample of this machine taken inside this process (``status`` on a local host).

On this machine, outside a container and without a DFLASH_TUI_PYTHON override, the probe that
``sample_once`` would start (``sh -c "python3 - --once ..."``, a second interpreter compiling
the probe's source) is the very code this process already has as ``dflash_tui.core.probe``:
here it is imported and run in a daemon thread, with the same arguments, and its dict is
parsed by the same ``Snapshot.from_dict`` that the subprocess's JSON line goes through.

The thread stands where the subprocess's timeout would: a sample that blocks (a hung log mount, a
wedged driver call outside the probe's own NVML guards) is given up after ``timeout`` and
reported as a TransportError, and the thread, a daemon, cannot keep the program alive. The
probe writes nothing to stdout outside its ``probe_main`` loop, which is not used here.

Importing this module is cheap on purpose: the probe's parts are imported in the sampling
thread and the Snapshot parser when the result is taken, so that a caller can start the
sample first and import what it needs next while the GPU tools run.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.timings import SAMPLE_TIMEOUT_S
from dflash_tui.core.link.errors import TransportError

if TYPE_CHECKING:
    from dflash_tui.core.base.snapshot import Snapshot


def probe_args(
    host: HostConfig, *, once: bool = False, interval: float = 2.0, extra: Sequence[str] = ()
) -> list[str]:
    """The probe's arguments for ``host`` (its command line after ``python3 -``)."""
    args = ["--once" if once else f"--interval={interval:g}", f"--run-root={host.run_root}"]
    args += [f"--log={p}" for p in host.logs]
    return args + list(extra)


def in_process(host: HostConfig) -> bool:
    """Whether ``host``'s probe can run in this process: this machine, not in a container,
    and no DFLASH_TUI_PYTHON naming another interpreter (whose modules may differ)."""
    return host.address is None and not host.container and not os.environ.get("DFLASH_TUI_PYTHON")


def new_probe(argv: Sequence[str]) -> Any:
    """A probe of this machine with ``argv`` (its state kept between its samples)."""
    from dflash_tui.core.probe.main import Probe, parse_args

    return Probe(parse_args(list(argv)))


def one_sample(argv: Sequence[str]) -> dict[str, Any]:
    """One sample by a probe made for it, its files released after."""
    probe = new_probe(argv)
    try:
        doc: dict[str, Any] = probe.sample()
        return doc
    finally:
        probe.close()


def stuck(timeout: float) -> TransportError:
    """A sample in this process not back within ``timeout``: as the subprocess's timeout."""
    return TransportError(
        f"the probe did not finish a sample within {timeout:.0f}s (a hung log mount or GPU driver?)"
    )


def failed(exc: BaseException) -> str:
    """What a probe in this process that raised says (as a probe process that died)."""
    return f"the probe failed: {type(exc).__name__}: {exc}"


class LocalSample:
    """One ``--once`` sample of this machine, started at construction in a daemon thread."""

    def __init__(
        self, host: HostConfig, timeout: float = SAMPLE_TIMEOUT_S, extra: Sequence[str] = ()
    ) -> None:
        self.argv = probe_args(host, once=True, extra=extra)
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.box: dict[str, Any] = {}
        self.thread = threading.Thread(target=self._work, name="probe-sample", daemon=True)
        self.thread.start()

    def _work(self) -> None:
        try:
            self.box["doc"] = one_sample(self.argv)
        except BaseException as exc:  # a SystemExit from argparse too: reported, never raised
            self.box["error"] = exc

    def result(self) -> Snapshot:
        """The sample as a Snapshot; TransportError when it failed or did not finish in time."""
        self.thread.join(max(0.0, self.deadline - time.monotonic()))
        if self.thread.is_alive():
            raise stuck(self.timeout)
        exc = self.box.get("error")
        if exc is not None:
            raise TransportError(failed(exc))
        from dflash_tui.core.base.snapshot import Snapshot

        return Snapshot.from_dict(self.box["doc"])
