"""The pieces of a torchrun job that need no process group: rank from the environment, the
checks only rank 0 does, per-rank GPUs and faults, data sharding, and resume's AdamW state."""

from __future__ import annotations

from pathlib import Path

import pytest

from dflash_train.cli import Fault, parse_fault, resolve
from dflash_train.ranks import World, shift_gpus, world_from_env
from dflash_train.usage import UsageError

TWO = {"WORLD_SIZE": "2", "LOCAL_RANK": "1", "RANK": "1"}


def test_world_from_torchrun_environment() -> None:
    assert world_from_env({}) == World() and not World().distributed
    assert world_from_env({"WORLD_SIZE": "1", "RANK": "0"}) == World()  # nproc 1: unchanged
    w = world_from_env({"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "1"})
    assert (w.rank, w.size, w.local_rank, w.distributed, w.main) == (3, 4, 1, True, False)
    with pytest.raises(UsageError, match=r"\$RANK='5' is not in 0..3"):
        world_from_env({"WORLD_SIZE": "4", "RANK": "5"})
    with pytest.raises(UsageError, match="not an integer"):
        world_from_env({"WORLD_SIZE": "two"})


def test_only_rank_0_checks_the_paths_it_alone_writes(tmp_path: Path) -> None:
    bad = ["--preset", "tiny", "--device", "cpu", "--out-dir", "/proc/nope/out"]
    with pytest.raises(UsageError, match="is not writable"):
        resolve(bad, {**TWO, "RANK": "0", "LOCAL_RANK": "0"})
    s = resolve(bad, TWO)  # rank 1 writes nothing there: no check, so no race with rank 0
    assert s.world == World(rank=1, size=2, local_rank=1)
    missing = tmp_path / "out"
    resolve(["--preset", "tiny", "--device", "cpu", "--out-dir", str(missing)], TWO)
    assert not missing.exists()


def test_dist_flags() -> None:
    s = resolve(["--preset", "tiny", "--device", "cpu"], {})
    assert (s.dist.timeout, s.dist.backend, s.dist.checksum_every) == (300.0, "auto", 50)
    s = resolve(["--preset", "tiny", "--dist-timeout", "20", "--checksum-every", "0"], {})
    assert (s.dist.timeout, s.dist.checksum_every) == (20.0, 0)
    for args, msg in (
        (["--dist-timeout", "0"], "--dist-timeout must be positive"),
        (["--checksum-every", "-1"], "--checksum-every must be non-negative"),
        (["--device", "cpu", "--dist-backend", "nccl"], "--dist-backend nccl needs CUDA"),
    ):
        with pytest.raises(UsageError, match=msg):
            resolve(["--preset", "tiny", *args], {})


def test_each_local_rank_owns_its_gpus() -> None:
    one = World(rank=1, size=2, local_rank=0)  # one process a host: the lists as given
    assert shift_gpus((0, 1), (2,), one, None) == ((0, 1), (2,))
    two = World(rank=1, size=2, local_rank=1)
    assert shift_gpus((0,), (1,), two, None) == ((2,), (3,))  # past the highest listed index
    assert shift_gpus((0,), (0,), two, 0) == ((0,), (0,))  # --rank-gpu-offset 0: shared
    s = resolve(["--preset", "tiny", "--target-gpus", "0", "--drafter-gpus", "1"], TWO)
    assert s.topology.target == (2,) and s.topology.drafter == (3,)
    assert s.drafter_devices() == ["cuda:3"]


def test_fault_names_a_rank() -> None:
    assert parse_fault("drafter:0:step:3:rank:1") == Fault("drafter", 0, 3, 1)
    assert parse_fault("drafter:1:step:3") == Fault("drafter", 1, 3, None)
    assert parse_fault("weights:0:step:2:rank:1") == Fault("weights", 0, 2, 1)
    with pytest.raises(UsageError):
        parse_fault("drafter:0:step:3:rank:")


def test_shards_split_the_stream_between_ranks() -> None:
    pytest.importorskip("torch")
    from dflash_train.data import BatchStream, Sample

    samples = [Sample(tuple(range(k, k + 16)), (1,) * 16) for k in range(60)]

    def stream() -> BatchStream:
        return BatchStream(samples, 2, 16, 16, seed=3)

    whole = [b for _, b in zip(range(24), iter(stream()), strict=False)]
    world, reps = 2, 3
    shards = [
        [b for _, b in zip(range(12), stream().shard(r, world, reps), strict=False)] for r in (0, 1)
    ]
    for r, shard in enumerate(shards):
        assert [b.index for b in shard] == list(range(12))  # the pipeline's own numbering
        for local, b in enumerate(shard):
            # local batch l of rank r: global batch (l // R) * W * R + r * R + l % R
            n = (local // reps) * world * reps + r * reps + local % reps
            assert b.input_ids.equal(whole[n].input_ids), (r, local, n)
    seen = {tuple(b.input_ids[0].tolist()) for shard in shards for b in shard}
    assert len(seen) == 24  # nothing trained twice, nothing left out, within those batches


def test_restored_replicas_do_not_share_adamw_moments() -> None:
    torch = pytest.importorskip("torch")
    from dflash_train import checkpoint as ckpt

    def replica() -> tuple[torch.nn.Module, torch.optim.Optimizer]:
        torch.manual_seed(0)
        m = torch.nn.Linear(4, 4)
        return m, torch.optim.AdamW(m.parameters(), lr=0.1)

    def step(m: torch.nn.Module, opt: torch.optim.Optimizer) -> None:
        m(torch.ones(2, 4)).square().sum().backward()
        opt.step()
        opt.zero_grad()

    src, src_opt = replica()
    step(src, src_opt)
    state = {"step": 1, "model": src.state_dict(), "optimizer": src_opt.state_dict()}
    (a, opt_a), (b, opt_b) = replica(), replica()
    ckpt.restore(state, a, opt_a)
    ckpt.restore(state, b, opt_b)
    step(a, opt_a)
    step(b, opt_b)  # with shared moments, b's step would see a's update of them
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_gradient_buckets_cover_every_weight(monkeypatch: pytest.MonkeyPatch) -> None:
    """reduce_grads in buckets smaller than the weights: every replica ends with replica 0's
    gradient (the process's mean) divided by the world size, element for element."""
    torch = pytest.importorskip("torch")
    import torch.distributed as tdist

    from dflash_train import dist
    from dflash_train.events import EventLog
    from dflash_train.pipeline import Replica

    class _Plain(Replica):  # any module: all its parameters are trained
        def params(self) -> list[torch.nn.Parameter]:
            return list(self.model.parameters())

    monkeypatch.setattr(dist, "BUCKET_ELEMENTS", 20)  # splits a 4x4 + 4 + 3x4 + 3 model
    tdist.init_process_group("gloo", store=tdist.HashStore(), rank=0, world_size=1)
    try:
        d = dist.Dist(resolve(["--preset", "tiny", "--device", "cpu"], {}), EventLog(None),
                      "gloo", torch.device("cpu"))  # fmt: skip
        reps = []
        for k in range(3):
            m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 3))
            for i, p in enumerate(m.parameters()):
                p.grad = torch.arange(p.numel(), dtype=torch.float32).view_as(p) + 100 * i + k
            reps.append(_Plain(m, torch.optim.AdamW(m.parameters()), torch.device("cpu")))
        want = [p.grad.clone() for p in reps[0].model.parameters()]
        d.reduce_grads(reps)
        for r in reps:
            for p, w in zip(r.model.parameters(), want, strict=True):
                assert torch.equal(p.grad, w)
    finally:
        tdist.destroy_process_group()
