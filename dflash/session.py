"""One training run from built models to the exit event (imports torch; the main thread's side)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType

import torch

from dflash_train import checkpoint as ckpt
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
    if s.preset.eval_batches <= 0:
        return
    r = evaluate(b, s.preset.seed + 7)
    log(f"eval {phase}: loss={r['loss']:.4f} acc={r['acc']:.3f} al={r['accept_len']:.2f}")
    held_out = bool(b.stream.held_out)
    events.emit("eval", phase=phase, held_out=held_out, **{k: round(v, 5) for k, v in r.items()})


def _install_signals(pipe: Pipeline) -> None:
    """SIGTERM/SIGINT stop the workers cleanly; the exit code then says which signal."""

    def handler(signum: int, frame: FrameType | None) -> None:
        pipe.shared.signal = signum
        pipe.stop()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)


class _Saver:
    """Saves replica 0; remembers the last step saved, so a stop does not save it twice."""

    def __init__(self, s: Settings, b: Built, events: EventLog) -> None:
        self.s, self.b, self.events = s, b, events
        self.last = b.start_step
        self.path: Path | None = None

    def __call__(self, step: int) -> None:
        rep, s = self.b.replicas[0], self.s
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


def train(s: Settings, events: EventLog, t0: float) -> int:
    if s.threads:
        torch.set_num_threads(s.threads)
    torch.manual_seed(s.preset.seed)
    b = build(s, events)
    warm(b, events)
    _eval(b, s, events, "before")
    save = _Saver(s, b, events)
    pipe = Pipeline(_plan(s, b), b.targets, b.replicas, iter(b.stream), events, save)
    _install_signals(pipe)
    p, reps = s.preset, len(b.replicas)
    log(
        f"dflash-train: training steps {b.start_step}..{p.steps} with "
        f"{len(b.targets)} target + {reps} drafter workers ({s.attention} attention); "
        f"global batch {p.batch_size * reps * p.grad_accum} sequences a step "
        f"({p.batch_size} x {reps} replicas x {p.grad_accum} accumulated)"
    )
    pipe.run()
    alive = [t.name for t in threading.enumerate() if t.name.startswith(("drafter", "target"))]
    code = _finish(s, b, pipe, events, save, "drafter-0" not in alive)
    events.emit("exit", code=code, seconds=round(time.monotonic() - t0, 2))
    if alive:  # a worker stuck in a C call: do not let interpreter shutdown wait on it
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
) -> int:
    if pipe.shared.errors:
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
