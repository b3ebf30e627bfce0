"""One training run from built models to the exit event (imports torch; the main thread's side)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import replace
from pathlib import Path
from types import FrameType

import torch

from dflash_train import checkpoint as ckpt
from dflash_train import dist as distributed
from dflash_train.build import Built, build, evaluate, warm
from dflash_train.cli import Settings
from dflash_train.events import EventLog, log
from dflash_train.export import export_checkpoint
from dflash_train.optim import max_replica_diff
from dflash_train.pipeline import Pipeline, Plan


def _plan(s: Settings, b: Built) -> Plan:
    p = s.preset
    return Plan(
        total_steps=p.steps,
        start_step=b.start_step,
        lr=p.lr,
        warmup_ratio=p.warmup_ratio,
        grad_clip=p.grad_clip,
        log_every=p.log_every,
        checkpoint_every=p.checkpoint_every,
        spec=b.spec,
        amp=b.amp,
        fault=s.fault,
        stall_timeout=s.stall_timeout,
        queue_size=s.queue_size,
        grad_accum=p.grad_accum,
        seed=p.seed,
    )


def _eval(b: Built, s: Settings, events: EventLog, phase: str) -> None:
    if s.preset.eval_batches <= 0 or not s.world.main:  # every rank holds the same weights
        return
    r = evaluate(b, s.preset.seed + 7)
    log(f"eval {phase}: loss={r['loss']:.4f} acc={r['acc']:.3f} al={r['accept_len']:.2f}")
    held_out = bool(b.stream.held_out)
    events.emit("eval", phase=phase, held_out=held_out, **{k: round(v, 5) for k, v in r.items()})


def _install_signals(pipe: Pipeline, agree_within: float | None) -> threading.Event:
    """SIGTERM/SIGINT stop the workers cleanly; the exit code then says which signal.

    Under torchrun (``agree_within``: --dist-timeout) a signal only asks: the next step
    barrier tells every rank, and all stop after that same step. Should no step come within
    the timeout (a peer stuck), the run fails instead of waiting on. Returns an event that
    cancels that deadline once the run has ended.
    """
    ended = threading.Event()

    def deadline() -> None:
        if not ended.wait(agree_within) and not pipe.shared.stop.is_set():
            msg = f"a stop was asked and no step agreed it within {agree_within:g} s"
            pipe.shared.fail("signal", msg + " (--dist-timeout)", pipe.barrier)

    def handler(signum: int, frame: FrameType | None) -> None:
        first = pipe.shared.signal is None
        pipe.shared.signal = signum
        if agree_within is None:
            pipe.stop()
        elif first:
            log(f"dflash-train: signal {signum}: stopping after the step all ranks agree on")
            threading.Thread(target=deadline, name="stop-deadline", daemon=True).start()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
    return ended


class _Saver:
    """Saves replica 0; remembers the last step saved, so a stop does not save it twice."""

    def __init__(self, s: Settings, b: Built, events: EventLog) -> None:
        self.s, self.b, self.events = s, b, events
        self.last = b.start_step
        self.path: Path | None = None

    def __call__(self, step: int) -> None:
        rep, s = self.b.replicas[0], self.s
        if not s.world.main:  # rank 0 alone writes; the others only follow the step
            self.last = step
            return
        if not all(bool(torch.isfinite(p).all()) for p in rep.params()):
            # A diverged drafter must not become the latest checkpoint --resume auto picks.
            msg = f"checkpoint at step {step} not saved: the weights are not finite (nan/inf)"
            log(f"dflash-train: warning: {msg}")
            self.events.emit("warning", what="checkpoint skipped", message=msg, step=step)
            return
        path = ckpt.save(
            s.out_dir, step, rep.model, self.b.cfg, rep.optimizer, ckpt.schedule_of(s.preset)
        )
        self.last = step
        self.path = path
        log(f"dflash-train: checkpoint step={step} -> {path}")
        self.events.emit("checkpoint", action="saved", path=str(path), step=step)


def _worker_failed(pipe: Pipeline, events: EventLog) -> int:
    for who, tb in pipe.shared.errors:
        log(f"dflash-train: worker {who} failed:\n{tb.rstrip()}", sys.stderr)
        events.emit(
            "error", kind="worker", worker=who, message=tb.strip().splitlines()[-1], traceback=tb
        )
    who = pipe.shared.errors[0][0]
    log(f"dflash-train: error: worker {who} failed; pipeline stopped", sys.stderr)
    return 1


def _for_rank(s: Settings) -> Settings:
    """Under torchrun, rank 0 alone resumes (and broadcasts) and exports; a fault hook that
    names another rank is not this one's."""
    f = s.fault
    if f is not None and f.rank is not None and f.rank != s.world.rank:
        s = replace(s, fault=None)
    if not s.world.main:
        s = replace(s, resume=None, export_dir=None)
    return s


def _start_line(s: Settings, b: Built) -> str:
    p, reps, w = s.preset, len(b.replicas), s.world.size
    line = (
        f"dflash-train: training steps {b.start_step}..{p.steps} with "
        f"{len(b.targets)} target + {reps} drafter workers ({s.attention} attention); "
        f"global batch {p.batch_size * reps * p.grad_accum * w} sequences a step "
        f"({p.batch_size} x {reps} replicas x {p.grad_accum} accumulated"
    )
    return line + (f" x {w} processes)" if w > 1 else ")")


def train(s: Settings, events: EventLog, t0: float) -> int:
    if s.threads:
        torch.set_num_threads(s.threads)
    s = _for_rank(s)
    dist = distributed.init(s, events)
    torch.manual_seed(s.preset.seed)
    b = build(s, events)
    if dist is not None:
        b.start_step = dist.sync_start(b.replicas, b.start_step)
    warm(b, events)
    _eval(b, s, events, "before")
    save = _Saver(s, b, events)
    w = s.world
    batches = b.stream.shard(w.rank, w.size, len(b.replicas)) if dist else iter(b.stream)
    pipe = Pipeline(_plan(s, b), b.targets, b.replicas, batches, events, save, dist, w.main)
    if dist is not None:
        pipe.beats.relay = distributed.heartbeat_relay(s)
    ended = _install_signals(pipe, s.dist.timeout if dist else None)
    log(_start_line(s, b))
    pipe.run()
    ended.set()
    alive = [t.name for t in threading.enumerate() if t.name.startswith(("drafter", "target"))]
    code = _finish(s, b, pipe, events, save, "drafter-0" not in alive, dist)
    events.emit("exit", code=code, seconds=round(time.monotonic() - t0, 2))
    together = not pipe.shared.errors and not alive
    if dist is not None and together:
        dist.close()
    if alive or (dist is not None and not together):
        # A worker stuck in a C call, or a job whose peers may be gone: neither interpreter
        # shutdown nor the process group's teardown may wait on them.
        if alive:
            log(f"dflash-train: threads still running at exit: {alive}", sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        events.close()
        os._exit(code)
    return code


def _finish(
    s: Settings,
    b: Built,
    pipe: Pipeline,
    events: EventLog,
    save: _Saver,
    saveable: bool,
    dist: distributed.Dist | None = None,
) -> int:
    if pipe.shared.errors:
        return _worker_failed(pipe, events)
    if dist is not None:  # every rank ended after the same step: the last check of the weights
        try:
            dist.check_replicas(pipe.step, b.replicas)
        except Exception:
            pipe.shared.errors.append(("main", traceback.format_exc()))
            return _worker_failed(pipe, events)
    if pipe.shared.signal is not None:
        log(f"dflash-train: stopped by signal {pipe.shared.signal} at step {pipe.step}")
        # A restart (SIGTERM) keeps the steps since the last save; replica 0 has ended, so its
        # weights and optimiser state are one consistent step. The file appears by rename: a
        # SIGKILL during the write leaves the previous checkpoint as the latest.
        if saveable and pipe.done[0] > save.last:
            save(pipe.done[0])
        return 128 + pipe.shared.signal
    recompiles = pipe.recompiles()
    diff = max_replica_diff([r.params() for r in b.replicas])
    log(
        f"dflash-train: done {pipe.step} steps; replicas max diff {diff:.3g}; "
        f"graphs compiled after warm-up: {recompiles}"
    )
    _eval(b, s, events, "after")
    save(pipe.step)
    if s.export_dir is not None and save.path is not None:
        out = export_checkpoint(save.path, s.export_dir)
        log(f"dflash-train: exported the drafter to {out}")
        events.emit("exported", path=str(out), step=pipe.step)
    events.emit("done", steps=pipe.step, max_replica_diff=diff, graphs_after_warmup=recompiles)
    return 0
