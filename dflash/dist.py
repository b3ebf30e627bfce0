"""One training job over several processes (torchrun): the collectives around the pipeline.

Each process runs the threaded pipeline unchanged (its target workers and drafter replicas);
this module couples the processes, every collective issued by one thread at a time: the main
thread before and after the pipeline, and during it the drafter thread that runs the step
barrier's action (the last replica to arrive), so the ranks meet once per step:

- start: every rank's replica count and weight shapes are compared, then rank 0's weights,
  AdamW state and step (after ``--resume``, which rank 0 alone reads) are broadcast;
- each step: the gradients, already averaged over the process's replicas, are summed across
  ranks in flat buckets on replica 0's device (the CPU with gloo) and divided by the world
  size; the step's figures and any stop request (a signal) are gathered from every rank, so
  every rank knows the global loss and whether to stop after this step;
- every ``--checksum-every`` steps, at the start and at the end: every replica's weight
  checksum is gathered to every rank; rank 0 records them (event ``replica_checksum``) and a
  difference is an error on every rank (exit 1).

A collective that fails (a peer died: gloo sees the connection close; NCCL's watchdog aborts
after ``--dist-timeout``) raises ``PeerError`` in the thread that issued it, which fails the
pipeline like any worker error: the job ends non-zero, never hangs.
"""

from __future__ import annotations

import copy
import json
import os
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

import torch
import torch.distributed as tdist
from torch import Tensor

from dflash_train.cli import Fault, Settings
from dflash_train.events import EventLog, log
from dflash_train.pipeline import Metrics, Replica

BUCKET_ELEMENTS = 1 << 25  # 128 MiB of fp32 a gradient all-reduce
NUDGE = 1e-3  # what the ``weights`` fault adds to one weight

T = TypeVar("T")


class PeerError(RuntimeError):
    """A collective failed: another rank failed, was stopped or cannot be reached."""


class ChecksumMismatch(RuntimeError):
    """The replicas' weights differ across ranks (or within one)."""


@dataclass(frozen=True)
class _Spec:
    """A tensor's place in a broadcast tree (rank 0 sends the tree without the data)."""

    index: int
    shape: tuple[int, ...]
    dtype: torch.dtype
    on_cpu: bool


@torch.no_grad()
def checksum(rep: Replica) -> float:
    """Float64 sum over the trainable weights of w + w squared: equal weights, equal sums."""
    total = torch.zeros((), dtype=torch.float64, device=rep.device)
    for p in rep.params():
        w = p.detach().double()
        total += w.sum() + w.square().sum()
    return float(total)


class Dist:
    """This process's part of the job: rank, backend, where collectives run."""

    def __init__(self, s: Settings, events: EventLog, backend: str, device: torch.device):
        self.world, self.events = s.world, events
        self.rank, self.size = s.world.rank, s.world.size
        self.backend, self.device = backend, device
        self.timeout = s.dist.timeout
        self.checksum_every = s.dist.checksum_every
        fault = s.fault
        self.fault: Fault | None = fault if fault is not None and fault.role == "weights" else None
        self.start_step = 0

    # ---- collectives ---------------------------------------------------------------------

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except (RuntimeError, ValueError) as exc:  # DistBackendError and gloo's errors
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            raise PeerError(
                f"{what} across {self.size} ranks failed on rank {self.rank} ({first}): "
                "another rank failed, was stopped or cannot be reached"
            ) from exc

    def _gather(self, what: str, values: Sequence[float]) -> list[list[float]]:
        """Every rank's ``values`` (same length on every rank), on every rank."""
        mine = torch.tensor(list(values), dtype=torch.float64, device=self.device)
        out = [torch.empty_like(mine) for _ in range(self.size)]
        self._call(what, lambda: tdist.all_gather(out, mine))
        return [t.tolist() for t in out]

    def _broadcast_tree(self, tree: Any) -> Any:
        """Rank 0's nested dicts/lists of tensors and plain values, on every rank."""
        tensors: list[Tensor] = []

        def strip(x: Any) -> Any:
            if isinstance(x, Tensor):
                tensors.append(x)
                return _Spec(len(tensors) - 1, tuple(x.shape), x.dtype, x.device.type == "cpu")
            if isinstance(x, dict):
                return {k: strip(v) for k, v in x.items()}
            if isinstance(x, list | tuple):
                return type(x)(strip(v) for v in x)
            return x

        box = [strip(tree) if self.rank == 0 else None]
        self._call("broadcast of the start state", lambda: tdist.broadcast_object_list(box, 0))
        received: list[Tensor] = []

        def fill(x: Any) -> Any:
            if isinstance(x, _Spec):
                if self.rank == 0:
                    buf = tensors[x.index].detach().to(self.device)
                else:
                    buf = torch.empty(x.shape, dtype=x.dtype, device=self.device)
                self._call("broadcast of the start state", lambda: tdist.broadcast(buf, 0))
                received.append(buf)
                return buf.cpu() if x.on_cpu else buf
            if isinstance(x, dict):
                return {k: fill(v) for k, v in x.items()}
            if isinstance(x, list | tuple):
                return type(x)(fill(v) for v in x)
            return x

        return fill(box[0])

    # ---- start -----------------------------------------------------------------------------

    def sync_start(self, replicas: list[Replica], start_step: int) -> int:
        """Rank 0's weights, optimiser state and step on every rank; returns the step."""
        shapes = [float(len(replicas))] + [float(p.numel()) for p in replicas[0].params()]
        counts = self._gather("shape check", [float(len(shapes))])
        rows = self._gather("shape check", shapes) if len(set(map(tuple, counts))) == 1 else []
        if not rows or any(r != rows[0] for r in rows):  # every rank sees it: all raise
            raise RuntimeError(
                "the ranks build different drafters (replica counts or weight shapes differ); "
                "every process needs the same flags and --drafter-workers"
            )
        rep0 = replicas[0]
        state = {
            "step": start_step,
            "model": rep0.model.state_dict(),
            "optimizer": rep0.optimizer.state_dict(),
        }
        got = self._broadcast_tree(state if self.rank == 0 else None)
        if self.rank != 0:
            for rep in replicas:  # each its own copy of the moments (see checkpoint.restore)
                rep.model.load_state_dict(got["model"])
                rep.optimizer.load_state_dict(copy.deepcopy(got["optimizer"]))
            log(f"dflash-train: weights, optimiser state and step {got['step']} from rank 0")
        self.start_step = int(got["step"])
        return self.start_step

    # ---- each step (the step barrier's action) ----------------------------------------------

    @torch.no_grad()
    def reduce_grads(self, replicas: list[Replica]) -> None:
        """Replica 0's gradients (the process's mean) -> the mean over ranks, on every replica."""
        sizes = []
        for p in replicas[0].params():
            if p.grad is None:
                raise RuntimeError("a drafter replica has no gradient for a trainable weight")
            sizes.append(p.grad.numel())
        lo = 0
        while lo < len(sizes):  # buckets of whole tensors, up to BUCKET_ELEMENTS (or one)
            hi, n = lo + 1, sizes[lo]
            while hi < len(sizes) and n + sizes[hi] <= BUCKET_ELEMENTS:
                n += sizes[hi]
                hi += 1
            self._reduce_bucket(replicas, lo, hi)
            lo = hi
        for rep in replicas:  # copies done before the replicas' threads clip and step
            if rep.device.type == "cuda":
                torch.cuda.synchronize(rep.device)

    def _reduce_bucket(self, replicas: list[Replica], lo: int, hi: int) -> None:
        own = [p.grad for p in replicas[0].params()[lo:hi]]
        flat = torch.cat([g.reshape(-1).float() for g in own if g is not None]).to(self.device)
        self._call("gradient all-reduce", lambda: tdist.all_reduce(flat))
        flat /= self.size
        for rep in replicas:
            at = 0
            for p in rep.params()[lo:hi]:
                g = p.grad
                assert g is not None
                g.copy_(flat[at : at + g.numel()].view_as(g).to(g.device, g.dtype))
                at += g.numel()

    def on_step(
        self, done: int, replicas: list[Replica], local: Metrics, signal: int | None
    ) -> tuple[Metrics, int | None]:
        """The step's figures over all ranks and the agreed stop (the highest signal number
        any rank received, None: go on); checks the weights when due. ``done``: steps whose
        weights the replicas hold (the optimiser step of this one comes after)."""
        self._maybe_nudge(done, replicas)
        if done == self.start_step or (self.checksum_every and done % self.checksum_every == 0):
            self.check_replicas(done, replicas)
        n = float(len(local.per))
        row = [local.loss * n, local.acc * n, local.accept * n, n, local.tok_s, float(signal or 0)]
        rows = self._gather("step figures", row + list(local.per))
        total = sum(r[3] for r in rows)
        merged = Metrics(
            loss=sum(r[0] for r in rows) / total,
            acc=sum(r[1] for r in rows) / total,
            accept=sum(r[2] for r in rows) / total,
            tok_s=sum(r[4] for r in rows),
            per=[v for r in rows for v in r[6:]],
        )
        agreed = int(max(r[5] for r in rows))
        return merged, agreed or None

    def _maybe_nudge(self, done: int, replicas: list[Replica]) -> None:
        """The ``weights`` fault hook: a replica's weights drift on one rank (a test of the
        checksum), e.g. ``DFLASH_FAULT=weights:0:step:3:rank:1``."""
        f = self.fault
        if f is None or f.step != done or (f.rank is not None and f.rank != self.rank):
            return
        with torch.no_grad():
            replicas[f.index % len(replicas)].params()[0].view(-1)[0] += NUDGE
        log(f"dflash-train: injected fault: replica {f.index} weights nudged at step {done}")

    def check_replicas(self, done: int, replicas: list[Replica]) -> None:
        rows = self._gather("replica checksum", [checksum(r) for r in replicas])
        values = [v for r in rows for v in r]
        equal = all(v == values[0] for v in values)
        log(
            f"dflash-train: replica_checksum step={done} rank={self.rank} "
            f"values={','.join(repr(v) for v in rows[self.rank])} equal={equal}"
        )
        if self.rank == 0:
            self.events.emit("replica_checksum", step=done, ranks=rows, equal=equal)
        if not equal:
            raise ChecksumMismatch(
                f"replica weights differ across ranks at step {done}: checksums {rows}"
            )

    # ---- end -------------------------------------------------------------------------------

    def close(self) -> None:
        """After a run that ended together (done, or an agreed stop): leave the group."""
        try:
            tdist.destroy_process_group()
        except Exception as exc:  # leaving is best effort: the run's result is already known
            log(f"dflash-train: warning: destroy_process_group: {exc}")


class StoreRelay:
    """The workers' heartbeats of ranks other than 0, through the job's c10d store (torchrun's
    TCPStore): each rank's watch loop sets its key every beat, rank 0's reads the others'.
    The store answers while a collective is stuck, so a worker stalled on rank 1 is still
    named, and a rank that went silent shows by the age of its last record."""

    PREFIX = "dflash-heartbeat"  # keys: dflash-heartbeat/<rank>

    def __init__(self, store: Any, rank: int, size: int) -> None:
        self.store, self.rank, self.size = tdist.PrefixStore(self.PREFIX, store), rank, size

    def publish(self, records: list[dict[str, Any]]) -> None:
        doc = {"time": round(time.time(), 3), "workers": records}
        self.store.set(str(self.rank), json.dumps(doc, default=str))

    def collect(self) -> list[tuple[float, list[dict[str, Any]]]]:
        out = []
        for r in range(1, self.size):
            if self.store.check([str(r)]):  # not there yet: get() would wait for it
                doc = json.loads(self.store.get(str(r)))
                out.append((float(doc["time"]), list(doc["workers"])))
        return out


def heartbeat_relay(s: Settings) -> StoreRelay | None:
    """The relay over the default process group's store; None outside torchrun (or where
    this torch keeps its store private: then rank 0's workers alone are written)."""
    get = getattr(tdist.distributed_c10d, "_get_default_store", None)
    if not s.world.distributed or get is None:
        return None
    try:
        return StoreRelay(get(), s.world.rank, s.world.size)
    except Exception as exc:
        log(f"dflash-train: warning: no heartbeat relay between ranks: {exc}")
        return None


def init(s: Settings, events: EventLog) -> Dist | None:
    """Join the job's process group (torchrun's environment); None when not under torchrun."""
    if not s.world.distributed:
        return None
    backend = s.dist.backend
    if backend == "auto":
        backend = "nccl" if s.device == "cuda" else "gloo"
    if backend == "nccl":
        # NCCL's watchdog ends a rank whose collective waits past the timeout, no hang.
        os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
        device = torch.device(s.drafter_devices()[0])
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")  # gloo's buffers live on the CPU, whatever the replicas'
    t0 = time.monotonic()
    w = s.world
    log(
        f"dflash-train: rank {w.rank} of {w.size} (local rank {w.local_rank}) joining the "
        f"process group ({backend}, timeout {s.dist.timeout:g} s)"
    )
    tdist.init_process_group(
        backend,
        timeout=timedelta(seconds=s.dist.timeout),
        device_id=device if backend == "nccl" else None,
    )
    d = Dist(s, events, backend, device)
    me = {
        "rank": w.rank,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "target_devices": s.target_devices(),
        "drafter_devices": s.drafter_devices(),
    }
    ranks: list[Any] = [None] * w.size
    d._call("rank survey", lambda: tdist.all_gather_object(ranks, me))
    log(f"dflash-train: process group ready in {time.monotonic() - t0:.1f} s: {ranks}")
    p = s.preset
    reps = len(s.drafter_devices())
    events.emit(
        "distributed",
        world=w.size,
        backend=backend,
        timeout=s.dist.timeout,
        checksum_every=s.dist.checksum_every,
        replicas_per_rank=reps,
        global_batch=w.size * reps * p.batch_size * p.grad_accum,
        ranks=ranks,
    )
    return d
