"""Worker threads: a loader, one target worker per target device, one drafter per drafter device.

loader -> [batches queue] -> target workers (no_grad features) -> [features queue] -> drafters.
Both queues are bounded and every blocking call has a timeout and checks one shared stop
event, so a failure anywhere stops everything within a fraction of a second: the failing
thread records its traceback, sets the stop event and aborts the step barrier that the drafter
replicas meet at to average their gradients. Nothing waits forever.
"""

from __future__ import annotations

import functools
import os
import queue
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

import torch
from torch import Tensor

from dflash_train.cli import Fault
from dflash_train.data import Batch
from dflash_train.events import EventLog, Heartbeats, beat, format_step, log, state
from dflash_train.loss import LossSpec, forward_loss
from dflash_train.mask import compile_stats, forbid_flex_fallback
from dflash_train.model import Drafter
from dflash_train.optim import average_grads, lr_at
from dflash_train.target import Target

POLL_S = 0.1  # how often a blocked thread looks at the stop event


class Stopped(Exception):
    """Raised inside a worker when the pipeline is stopping; not an error."""


@dataclass
class Replica:
    model: Drafter
    optimizer: torch.optim.Optimizer
    device: torch.device

    def params(self) -> list[torch.nn.Parameter]:
        return self.model.trainable()


@dataclass
class Features:
    input_ids: Tensor
    loss_mask: Tensor
    features: Tensor
    index: int = 0  # the batch's place in the stream: which replica and micro-step take it


@dataclass
class Report:
    loss: float
    acc: float
    accept_len: float
    tokens: int
    seconds: float


@dataclass
class Metrics:
    """One step's figures: means over the replicas, tok/s summed, each replica's tok/s."""

    loss: float
    acc: float
    accept: float
    tok_s: float
    per: list[float]


class StepSync(Protocol):
    """The other processes of a torchrun job (dflash_train.dist), met in the step barrier."""

    def reduce_grads(self, replicas: list[Replica]) -> None: ...

    def on_step(
        self, done: int, replicas: list[Replica], local: Metrics, signal: int | None
    ) -> tuple[Metrics, int | None]: ...


@dataclass
class Plan:
    total_steps: int
    start_step: int
    lr: float
    warmup_ratio: float
    grad_clip: float
    log_every: int
    checkpoint_every: int
    spec: LossSpec
    amp: torch.dtype | None  # autocast dtype on GPU, None on the CPU
    fault: Fault | None
    stall_timeout: float
    queue_size: int
    grad_accum: int = 1  # micro-batches per replica per optimiser step
    seed: int = 0  # anchors of step k on replica i: a generator seeded from (seed, k, i)


@dataclass
class Shared:
    stop: threading.Event = field(default_factory=threading.Event)
    errors: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_progress: float = field(default_factory=time.monotonic)
    signal: int | None = None

    def fail(self, who: str, tb: str, barrier: threading.Barrier | None) -> None:
        with self.lock:
            self.errors.append((who, tb))
        self.stop.set()
        if barrier is not None:
            barrier.abort()


def q_put(q: queue.Queue, item: object, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            q.put(item, timeout=POLL_S)
            state("work")
            return
        except queue.Full:
            state("wait:queue")
    raise Stopped


def q_get(q: queue.Queue, stop: threading.Event) -> object:
    while True:
        try:
            item = q.get(timeout=POLL_S)
            state("work")
            return item
        except queue.Empty:
            state("wait:queue")
            if stop.is_set():
                raise Stopped from None


def maybe_fault(fault: Fault | None, role: str, index: int, step: int) -> None:
    """The test-only fault hooks: --fault / $DFLASH_FAULT (e.g. drafter:1:step:3) raises;
    $DFLASH_STALL=ROLE:INDEX:STEP:SECONDS (e.g. drafter:1:3:30) makes that worker sleep there,
    a stalled worker the others wait on (docs/pipeline.md); ``...:rank:N`` only on that rank."""
    stall = os.environ.get("DFLASH_STALL", "").split(":")
    rank_ok = len(stall) == 4 or (
        len(stall) == 6 and stall[4] == "rank" and stall[5] == os.environ.get("RANK", "0")
    )
    if rank_ok and stall[:3] == [role, str(index), str(step)]:
        log(f"dflash-train: test hook: {role} worker {index} stalls at step {step} (DFLASH_STALL)")
        time.sleep(float(stall[3]))
    if fault is not None and (fault.role, fault.index, fault.step) == (role, index, step):
        raise RuntimeError(f"injected fault: {role} worker {index} at step {step} (DFLASH_FAULT)")


def thread_setup(device: torch.device, flex: bool) -> None:
    """Per-thread state: the current CUDA device and dynamo's config (per thread from 2.12)."""
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if flex:
        forbid_flex_fallback()


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def amp_context(device: torch.device, amp: torch.dtype | None) -> torch.autocast:
    return torch.autocast(device.type, dtype=amp or torch.float32, enabled=amp is not None)


class Pipeline:
    """Owns the queues, the threads and the per-step bookkeeping of one training run."""

    def __init__(
        self,
        plan: Plan,
        targets: list[Target],
        replicas: list[Replica],
        batches: Iterator[Batch],
        events: EventLog,
        on_checkpoint: Callable[[int], None],
        sync: StepSync | None = None,
        main: bool = True,
    ) -> None:
        self.plan, self.targets, self.replicas = plan, targets, replicas
        self.batches, self.events, self.on_checkpoint = batches, events, on_checkpoint
        self.sync, self.main = sync, main  # main: this process logs steps (rank 0)
        self.stop_after: int | None = None  # a stop agreed across ranks: the last step to run
        self.shared = Shared()
        self.beats = Heartbeats(events)
        self.batch_q: queue.Queue = queue.Queue(maxsize=plan.queue_size)
        # One feature queue per replica: batch n goes to replica n % R, so which batches a
        # replica trains on never depends on thread timing (same seed, same losses).
        self.feat_qs: list[queue.Queue] = [queue.Queue(maxsize=plan.queue_size) for _ in replicas]
        self.barrier = threading.Barrier(len(replicas), action=self._guarded_action)
        self.reports: list[Report | None] = [None] * len(replicas)
        self.step = plan.start_step  # completed optimiser steps
        # Each replica's own count: after a stop replica 0 may be behind the logged step.
        self.done = [plan.start_step] * len(replicas)
        self.last_step_at = time.perf_counter()
        self.flex = plan.spec.attention == "flex"
        self.graphs_warm = compile_stats()["unique_graphs"]  # after warm-up: none should follow
        self.graphs = self.graphs_warm  # the count last seen by the step watch

    # ---- threads -------------------------------------------------------------------------

    def _loader(self) -> None:
        self.beats.join("loader", 0, None)
        for n, batch in enumerate(self.batches):
            beat(n, self.batch_q.qsize())
            maybe_fault(self.plan.fault, "loader", 0, n)
            q_put(self.batch_q, batch, self.shared.stop)

    def _target(self, j: int) -> None:
        tgt = self.targets[j]
        thread_setup(tgt.device, flex=False)
        self.beats.join("target", j, tgt.device.index)
        n = 0
        while True:
            beat(n, self.batch_q.qsize())
            batch = q_get(self.batch_q, self.shared.stop)
            assert isinstance(batch, Batch)
            maybe_fault(self.plan.fault, "target", j, n)
            feats = tgt.features(batch.input_ids)
            sync(tgt.device)  # finished before another device's thread copies it
            item = Features(batch.input_ids, batch.loss_mask, feats, batch.index)
            q_put(self.feat_qs[batch.index % len(self.replicas)], item, self.shared.stop)
            n += 1

    def _next_item(self, i: int, index: int, pending: dict[int, Features]) -> Features:
        """Batch number ``index`` for replica ``i``; target workers may finish out of order."""
        while index not in pending:
            item = q_get(self.feat_qs[i], self.shared.stop)
            assert isinstance(item, Features)
            pending[item.index] = item
        return pending.pop(index)

    def _drafter(self, i: int) -> None:
        rep, plan = self.replicas[i], self.plan
        thread_setup(rep.device, self.flex)
        reps, accum = len(self.replicas), plan.grad_accum
        pending: dict[int, Features] = {}
        self.beats.join("drafter", i, rep.device.index)
        for step in range(plan.start_step, plan.total_steps):
            beat(step, self.feat_qs[i].qsize())
            t0 = time.perf_counter()
            parts = []
            for a in range(accum):
                index = ((step - plan.start_step) * accum + a) * reps + i
                item = self._next_item(i, index, pending)
                if a == 0:
                    maybe_fault(plan.fault, "drafter", i, step)
                gen = torch.Generator().manual_seed((plan.seed * 1_000_003 + step) * 4099 + index)
                parts.append(self._forward_backward(rep, item, gen, 1.0 / accum))
            report = Report(
                sum(r.loss for r in parts) / accum,
                sum(r.acc for r in parts) / accum,
                sum(r.accept_len for r in parts) / accum,
                sum(r.tokens for r in parts),
                0.0,
            )
            report.seconds = time.perf_counter() - t0
            self.reports[i] = report
            state("wait:barrier")
            self.barrier.wait()  # the last to arrive averages the gradients and logs
            state("work")
            self._optimizer_step(rep, step)
            self.done[i] = step + 1
            if i == 0 and self._checkpoint_due(step + 1):
                self.on_checkpoint(step + 1)
            if self.stop_after is not None and step + 1 >= self.stop_after:
                return  # every rank stops after this same step

    def _checkpoint_due(self, done: int) -> bool:
        """Periodic saves by drafter 0; the final one is saved by the main thread."""
        every = self.plan.checkpoint_every
        return bool(every) and done % every == 0 and done < self.plan.total_steps

    def _forward_backward(
        self, rep: Replica, item: Features, gen: torch.Generator, scale: float
    ) -> Report:
        dev = rep.device
        ids = item.input_ids.to(dev, non_blocking=True)
        lm = item.loss_mask.to(dev, non_blocking=True)
        feats = item.features.to(dev, non_blocking=True)
        with amp_context(dev, self.plan.amp):
            loss, m = forward_loss(rep.model, ids, lm, feats, self.plan.spec, gen)
        (loss * scale).backward()  # gradients accumulate over the micro-batches
        sync(dev)  # gradients complete before another thread reads them
        return Report(
            float(loss.detach()), float(m["acc"]), float(m["accept_len"]), ids.numel(), 0.0
        )

    def _optimizer_step(self, rep: Replica, step: int) -> None:
        plan = self.plan
        lr = lr_at(step, plan.total_steps, plan.lr, plan.warmup_ratio)
        for group in rep.optimizer.param_groups:
            group["lr"] = lr
        if plan.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(rep.params(), plan.grad_clip)
        rep.optimizer.step()
        rep.optimizer.zero_grad(set_to_none=True)

    # ---- the step barrier's action (runs in the last drafter thread to arrive) -----------

    def _guarded_action(self) -> None:
        try:
            self._on_step()
        except BaseException:
            # Record first: the barrier breaks when this raises and wakes the others.
            self.shared.fail(threading.current_thread().name, traceback.format_exc(), None)
            raise

    def _on_step(self) -> None:
        average_grads([r.params() for r in self.replicas])
        if self.sync is not None:
            self.sync.reduce_grads(self.replicas)
        self._watch_compiles()
        reports = [r for r in self.reports if r is not None]
        now = time.perf_counter()
        elapsed, self.last_step_at = now - self.last_step_at, now
        self.step += 1
        self.shared.last_progress = time.monotonic()
        n = len(reports)
        m = Metrics(
            loss=sum(r.loss for r in reports) / n,
            acc=sum(r.acc for r in reports) / n,
            accept=sum(r.accept_len for r in reports) / n,
            tok_s=sum(r.tokens for r in reports) / max(elapsed, 1e-9),
            per=[r.tokens / max(r.seconds, 1e-9) for r in reports],
        )
        if self.sync is not None:
            m, agreed = self.sync.on_step(self.step - 1, self.replicas, m, self.shared.signal)
            if agreed is not None:
                self.shared.signal, self.stop_after = agreed, self.step
        lr = lr_at(self.step - 1, self.plan.total_steps, self.plan.lr, self.plan.warmup_ratio)
        last = self.step == self.plan.total_steps
        if not self.main:
            return
        if self.step % self.plan.log_every == 0 or last or self.step == self.plan.start_step + 1:
            tq, dq = self.batch_q.qsize(), sum(q.qsize() for q in self.feat_qs)
            log(format_step(self.step, m.loss, m.acc, m.tok_s, lr, tq, dq, m.accept, m.per))
            self.events.emit(
                "step",
                step=self.step,
                loss=round(m.loss, 5),
                acc=round(m.acc, 4),
                accept_len=round(m.accept, 3),
                tok_s=round(m.tok_s, 1),
                drafter_tok_s=[round(v, 1) for v in m.per],
                lr=lr,
                tq=tq,
                dq=dq,
            )

    def _watch_compiles(self) -> None:
        """Say at once when a graph is compiled after warm-up: a worker thread (or autograd's,
        re-running checkpointed layers, where dynamo's per-thread limits are torch's) has
        recompiled, the first link of the seed's failure chain. The end of the run counts
        them too (``graphs_after_warmup``)."""
        now = compile_stats()["unique_graphs"]
        if now > self.graphs:
            n, step = now - self.graphs, self.step + 1
            msg = f"{n} graph(s) compiled after warm-up, by step {step}"
            log(f"dflash-train: warning: {msg}")
            self.events.emit("warning", what="recompiled after warm-up", message=msg)
            self.graphs = now

    def recompiles(self) -> int:
        """Graphs compiled since warm-up (the ``done`` event's ``graphs_after_warmup``)."""
        return compile_stats()["unique_graphs"] - self.graphs_warm

    # ---- the main thread -----------------------------------------------------------------

    def _thread(self, name: str, fn: Callable[[], None]) -> threading.Thread:
        def run() -> None:
            try:
                fn()
            except Stopped:
                pass
            except threading.BrokenBarrierError:
                if not self.shared.stop.is_set():
                    self.shared.fail(name, traceback.format_exc(), self.barrier)
            except BaseException:
                self.shared.fail(name, traceback.format_exc(), self.barrier)

        # daemon: a thread stuck inside a C call must not keep a failed process alive
        return threading.Thread(target=run, name=name, daemon=True)

    def run(self) -> None:
        """Start every thread, watch them, stop them all; errors land in ``self.shared``."""
        drafters = [
            self._thread(f"drafter-{i}", functools.partial(self._drafter, i))
            for i in range(len(self.replicas))
        ]
        others = [self._thread("loader", self._loader)]
        others += [
            self._thread(f"target-{j}", functools.partial(self._target, j))
            for j in range(len(self.targets))
        ]
        self.shared.last_progress = time.monotonic()
        self.last_step_at = time.perf_counter()
        for t in others + drafters:
            t.start()
        self._watch(drafters)
        self.stop()
        deadline = time.monotonic() + 10.0
        for t in drafters + others:
            t.join(timeout=max(0.0, deadline - time.monotonic()))

    def _watch(self, drafters: list[threading.Thread]) -> None:
        while not self.shared.stop.wait(POLL_S):
            self.beats.emit_due()
            if not any(t.is_alive() for t in drafters):
                return  # every drafter finished its steps
            idle = time.monotonic() - self.shared.last_progress
            if idle > self.plan.stall_timeout:
                msg = f"no training step for {idle:.0f} s (--stall-timeout); stopping"
                self.shared.fail("watchdog", msg, self.barrier)

    def stop(self) -> None:
        self.shared.stop.set()
        self.barrier.abort()
