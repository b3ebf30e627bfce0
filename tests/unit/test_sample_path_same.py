"""The per-sample path's short cuts say what the plain computation says: the tracker (its
history cut to the diagnosis' window, the process indexes it drops, the run's members it
keeps, the label run lengths each sample keeps for the next) against ``diagnose`` over the
last 120 samples, each parsed afresh; diagnoses over any samples shared between lists (kept
run lengths counted in another order) against fresh copies; the recorder's encoder (rows
told by identity) against the same records made from dicts, and read back.

The samples' story: a run of 8 ranks, a stranger's job for a while, a GPU quiet for a while,
rank 7 killed (its memory left, then OOM-killed in the kernel's log), the run crashing (its
GPUs idle) and a second run starting (its GPUs quiet while it starts up)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from dflash_train.topology import Topology
from dflash_tui.core.base.snapshot import RunRecord, Snapshot
from dflash_tui.core.base.snapshot_delta import ProcTables
from dflash_tui.core.diagnosis.diagnose import diagnose
from dflash_tui.core.diagnosis.progress import parse_line
from dflash_tui.core.diagnosis.thresholds import DEFAULT, Thresholds
from dflash_tui.core.diagnosis.timeline import _ERROR, _MILESTONES, Event, Timeline
from dflash_tui.core.diagnosis.tracker import Tracker
from dflash_tui.core.probe.procs import RowDelta
from dflash_tui.core.record.codec import Decoder, Encoder, _row, snapshot_dict

TOPO = Topology.parse("0-3:4-7")
RUN_PGID = 500
END = 200  # the first run crashes here
NEXT, NEXT_PGID, NEXT_BUSY = 215, 900, 230  # the second run starts, its ranks load the GPUs


def _ranks(i: int) -> tuple[int, int]:
    """(the running run's PGID, its ranks alive) at sample ``i``."""
    if i < END:
        return RUN_PGID, 8 if i < 150 else 7
    return (NEXT_PGID, 8) if i >= NEXT else (RUN_PGID, 0)


def _procs(i: int) -> list[dict[str, Any]]:
    rows = [{"pid": 1, "ppid": 0, "pgid": 1, "sid": 1, "cmd": "init", "rss_kb": 9000}]
    rows += [{"pid": 100 + k, "ppid": 1, "pgid": 100 + k, "sid": 100 + k, "state": "S",
              "cmd": f"daemon {k}", "cpu_pct": float((i + k) % 3 == 0)}
             for k in range(30)]  # fmt: skip
    pgid, ranks = _ranks(i)
    if i < END or i >= NEXT:
        rows.append({"pid": pgid, "ppid": 1, "pgid": pgid, "sid": pgid,
                     "start_ticks": 10 if pgid == RUN_PGID else 500,
                     "cmd": "torchrun train.py"})  # fmt: skip
    # rank 7 is killed at sample 150 (and its GPU left with memory: an orphan, then gone)
    for g in range(ranks):
        rows.append({"pid": pgid + 1 + g, "ppid": pgid, "pgid": pgid,
                     "sid": pgid, "state": "R", "start_ticks": 11 if pgid == RUN_PGID else 501,
                     "cpu_pct": 90.0 + (i + g) % 7,
                     "cmd": f"python train.py --rank {g}"})  # fmt: skip
    if 40 <= i < 90:  # a stranger's job on GPU 5 for a while (reparented to init: an orphan)
        rows.append({"pid": 7777, "ppid": 1, "pgid": 7777, "sid": 7777, "user": "alice",
                     "cmd": "python notebook.py"})  # fmt: skip
    return rows


def _sample(i: int, step: float) -> dict[str, Any]:
    t = 1_000_000.0 + i * step
    pgid, ranks = _ranks(i)
    busy = i < END or i >= NEXT_BUSY
    gpus = [{"index": g, "uuid": f"GPU-{g}",
             "util": 0 if (g == 3 and 60 <= i < 80) or not busy else 95,
             "mem_used_mib": 60_000 + 100 * ((i + g) % 9) if busy else 0,
             "mem_total_mib": 81_559}
            for g in range(8)]  # fmt: skip
    gprocs = [{"pid": pgid + 1 + g, "gpu_uuid": f"GPU-{g}", "used_mib": 59_000}
              for g in range(ranks if busy else 0)]  # fmt: skip
    if 40 <= i < 90:
        gprocs.append({"pid": 7777, "gpu_uuid": "GPU-5", "used_mib": 2000})
    # read before the run started: it names the rank only while the rank is in the window
    ooms = [{"time": 999_000.0, "pid": RUN_PGID + 8, "name": "python", "text": "Killed process"}]
    kernel = {"source": "kmsg", "xids": [], "ooms": ooms if i >= 151 else []}
    machine = {"oom_kill": 0 if i < 150 else 1, "kernel_log": kernel}
    run: dict[str, Any] = {"id": "r1", "dir": "/runs/r1", "pid": RUN_PGID, "pgid": RUN_PGID,
                           "start_ticks": 10, "started_at": 1_000_000.0 - 30}  # fmt: skip
    if END <= i < NEXT:
        run |= {"exit_code": 1, "ended_at": 1_000_000.0 + END * step}
    elif i >= NEXT:
        start = 1_000_000.0 + NEXT * step
        run = {"id": "r2", "dir": "/runs/r2", "pid": NEXT_PGID, "pgid": NEXT_PGID,
               "start_ticks": 500, "started_at": start}  # fmt: skip
    return {"time": t, "host": "box", "telemetry": {"source": "nvml"}, "gpus": gpus,
            "gpu_procs": gprocs, "procs": _procs(i), "run": run, "machine": machine}  # fmt: skip


def _docs(n: int, step: float) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield _sample(i, step)


def _stream(docs: Iterator[dict[str, Any]]) -> Iterator[Snapshot]:
    """The samples as a probe stream with change lists brings them (a whole table every 60
    lines): parsed with the stream's tables, the unchanged rows' records and the PID index
    made from the line before."""
    enc, tables = RowDelta(delta=True), ProcTables()
    for doc in docs:
        doc = dict(doc)
        procs = doc.pop("procs")
        head = json.dumps(doc)
        yield Snapshot.from_json(head[:-1] + ", " + enc.encode(procs) + "}", tables)


@pytest.mark.parametrize("stream", [False, True], ids=["dicts", "change-lists"])
@pytest.mark.parametrize(
    ("step", "th"),
    [(1.0, DEFAULT), (1.0, replace(DEFAULT, persist_s=30.0)), (0.25, DEFAULT)],
    ids=["1Hz", "1Hz-window-90s", "4Hz-120-samples-bind"],
)
def test_tracker_says_what_diagnose_over_the_last_120_samples_says(
    step: float, th: Thresholds, stream: bool
) -> None:
    tracker = Tracker(TOPO, th)
    plain: list[Snapshot] = []
    earlier = None
    codes: set[str] = set()
    given = _stream(_docs(300, step)) if stream else map(Snapshot.from_dict, _docs(300, step))
    made = 0  # samples whose PID index came made from the line before's
    for doc, snap in zip(_docs(300, step), given, strict=True):
        made += "_by_pid" in snap.__dict__
        assert snap._by_pid == {p.pid: p for p in snap.procs}
        got = tracker.add(snap)
        plain.append(Snapshot.from_dict(doc))  # its own records: nothing kept from the other
        want = diagnose(plain[-120:], TOPO, th, tracker.progress, True, earlier)
        assert got == want
        earlier = want
        codes |= {f.code for f in got.findings} | {c for g in got.gpus for c in g.codes}
    # the sequence reaches the rules the short cuts touch
    assert {"oom-killed", "orphan-process", "idle", "run-exited"} <= codes, codes
    assert made > 250 if stream else made == 0


def test_diagnoses_over_shared_samples_in_any_order_say_what_fresh_samples_say() -> None:
    """Samples shared by lists that are not one moving window (every other sample, a window
    that jumps back, two settings): the run lengths kept on a sample were counted from another
    list's sample before it, and must be counted again, not read."""
    docs = list(_docs(300, 1.0))
    shared = [Snapshot.from_dict(doc) for doc in docs]
    strict = replace(DEFAULT, persist_s=5.0)
    pick = random.Random(7)
    cuts: list[list[int]] = [list(range(k, k + 70)) for k in (0, 40, 5, 130, 190, 60, 205)]
    cuts += [list(range(k, k + 90, 2)) for k in (10, 11, 150)]  # every other sample
    cuts += [sorted(pick.sample(range(300), 50)) for _ in range(6)]
    cuts += [list(range(k, k + 70)) for k in (40, 190)]  # back to windows counted above
    for cut in cuts:
        for th in (DEFAULT, strict):
            got = diagnose([shared[i] for i in cut], TOPO, th, None, True)
            fresh = [Snapshot.from_dict(docs[i]) for i in cut]
            assert got == diagnose(fresh, TOPO, th, None, True), (cut[0], th.persist_s)


def test_members_are_the_filtered_table_and_kept() -> None:
    snap = Snapshot.from_dict(_sample(10, 1.0))
    want = tuple(p for p in snap.procs if RUN_PGID in (p.pgid, p.sid))
    assert snap.members(RUN_PGID) == want and len(want) == 9
    assert snap.members(RUN_PGID) is snap.members(RUN_PGID)  # kept
    assert snap.members(4242) == ()
    assert snap.proc(RUN_PGID + 1) == want[1] and snap.parents[RUN_PGID + 1] == RUN_PGID


def test_encoder_rows_by_identity_are_the_rows_by_value_and_read_back() -> None:
    by_record, by_dict, dec = Encoder(), Encoder(), Decoder()
    snaps = [Snapshot.from_dict(doc) for doc in _docs(300, 1.0)]
    # a PID gone and back (its order said), and a row equal but not the same record
    snaps[100] = replace(snaps[100], procs=snaps[100].procs[1:])
    snaps[101] = replace(snaps[101], procs=tuple(replace(p) for p in snaps[101].procs))
    # a PID twice in a table (its last row is the one kept), two samples running, then once
    for k in (120, 121):
        snaps[k] = replace(snaps[k], procs=(*snaps[k].procs, replace(snaps[k].procs[3], rss_kb=7)))
    # two rows swap places: the same PIDs in another order
    swapped = list(snaps[130].procs)
    swapped[2], swapped[5] = swapped[5], swapped[2]
    snaps[130] = replace(snaps[130], procs=tuple(swapped))
    for snap in snaps:
        rec = by_record.sample(snap, None, ())
        rows = {p.pid: _row(p) for p in snap.procs}
        assert rec == by_dict.record(snapshot_dict(snap), rows, None, [])
        back = dec.snap(rec)
        rows_back = {p.pid: _row(p) for p in snap.procs}
        assert back["procs"] == list(rows_back.values())
        if len(rows_back) == len(snap.procs):
            assert Snapshot.from_dict(back) == snap


LOG_LINES = (
    "step=12 loss=2.31 acc=0.41 tok/s=2810", "Step: 3, loss 2.0", "ſtep=4 loss=1.5 tok/s=9",
    "checkpoint step=60", "model loaded in 12 s", "Loaded the target model", "MODEL_LOADED",
    "torch.compile: compiled 40 graphs", "compİled", "compıled", "Model Loaded",
    "compilation done", "warm-up finished",
    "WARMED", "Traceback (most recent call last):", "ValueError: bad shape", "RuntimeError: "
    "step=7 loss=2.0 tok/s=5", "ValueError: compiled badly", "no milestone here", "",
    '{"event": "compiled", "time": 1}', '{"event": "step", "step": 9}', '{"event": 3}',
    '{"not json', "[rank1] INFO shard 745 ready", "tokens/s=2,810 loss=3",
)  # fmt: skip


def _named(line: str) -> tuple[str | None, str]:
    """What a log line names, every rule asked in turn (the timeline's rules, plainly)."""
    head = line[:2000]
    if head.startswith("{"):
        try:
            doc = json.loads(head)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("event"), str):
            name = doc["event"]
            if name == "step":
                return "first_step", f"first step (step {doc.get('step', '?')})"
            return name, f"{name.replace('_', ' ')}"
    for kind, rx in _MILESTONES:
        if rx.search(head):
            return kind, kind.replace("_", " ")
    m = parse_line(head)
    if m is not None and m.step is not None:
        return "first_step", f"first step (step {m.step})"
    if _ERROR.search(head):
        return "error", f"error in log: {head[:160]}"
    return None, ""


def test_timeline_milestones_say_what_each_line_says() -> None:
    """The timeline skips what a line would say once that milestone was reported: the events
    are those of asking every line in full."""
    pick = random.Random(3)
    for _ in range(200):
        lines = [pick.choice(LOG_LINES) for _ in range(pick.randint(1, 12))]
        cut = pick.randint(0, len(lines))
        got: list[Event] = []
        timeline = Timeline()
        timeline._run = RunRecord(id="r1", dir="/runs/r1")
        timeline._milestones(tuple(lines[:cut]), 1.0, got)
        timeline._milestones(tuple(lines[cut:]), 2.0, got)
        want, seen = [], set()
        for k, line in enumerate(lines):
            kind, text = _named(line)
            if kind is not None and kind not in seen:
                seen.add(kind)
                sev = "error" if kind == "error" else "info"
                want.append(Event(1.0 if k < cut else 2.0, kind, sev, text))
        assert got == want, lines


# A second script, for what a window copy (Snapshot.keep_for_window) must still answer: a run
# ends, the next one's processes run before its record names their group (its launcher at
# work), one of them is killed by the OOM killer then (named from the samples whose record
# had no group), the run's group changes, a worker keeps the run's session in a group of its
# own, orphan and foreign GPU processes come and go, and a short-lived process every sample.
R1, R2, R2_MOVED, OOM_PID = 500, 900, 950, 904


def _relaunch(i: int) -> dict[str, Any]:
    t = 2_000_000.0 + i
    rows: list[dict[str, Any]] = [{"pid": 1, "ppid": 0, "pgid": 1, "sid": 1, "cmd": "init"}]
    rows += [{"pid": 100 + k, "ppid": 1, "pgid": 100 + k, "sid": 100 + k, "cmd": f"d {k}",
              "cpu_pct": float((i * 7 + k) % 11)} for k in range(40)]  # fmt: skip
    rows.append({"pid": 20_000 + i, "ppid": 101, "pgid": 101, "sid": 101, "cmd": f"cron {i}"})
    gprocs: list[dict[str, Any]] = []
    run: dict[str, Any]
    if i < 60:
        run = {"id": "r1", "dir": "/runs/r1", "pid": R1, "pgid": R1, "start_ticks": 10,
               "started_at": t - i - 5}  # fmt: skip
        rows.append({"pid": R1, "ppid": 1, "pgid": R1, "sid": R1, "cmd": "torchrun r1"})
        for g in range(4):
            rows.append({"pid": R1 + 1 + g, "ppid": R1, "pgid": R1, "sid": R1, "state": "R",
                         "cpu_pct": 80.0 + (i + g) % 5, "cmd": f"r1 rank {g}"})  # fmt: skip
            gprocs.append({"pid": R1 + 1 + g, "gpu_uuid": f"GPU-{g}", "used_mib": 50_000})
    elif i < 70:
        run = {"id": "r1", "dir": "/runs/r1", "pid": R1, "pgid": R1, "start_ticks": 10,
               "started_at": t - i - 5, "exit_code": 1, "ended_at": t - i + 60}  # fmt: skip
    else:
        group = None if i < 80 else R2 if i < 140 else R2_MOVED
        run = {"id": "r2", "dir": "/runs/r2", "launcher": 4000, "started_at": None}
        if group is not None:
            run |= {"pid": group, "pgid": group, "started_at": 2_000_070.0}
        procs_group = R2 if i < 140 else R2_MOVED
        rows.append({"pid": procs_group, "ppid": 1, "pgid": procs_group, "sid": R2,
                     "cmd": "torchrun r2"})  # fmt: skip
        for g in range(4):
            pid = R2 + 1 + g
            if pid == OOM_PID and i >= 78:
                continue  # killed while the record named no group yet
            rows.append({"pid": pid, "ppid": procs_group, "pgid": procs_group, "sid": R2,
                         "cpu_pct": 70.0 + (i + g) % 3, "cmd": f"r2 rank {g}"})  # fmt: skip
            gprocs.append({"pid": pid, "gpu_uuid": f"GPU-{g}", "used_mib": 40_000})
        if i < 82:  # the killed rank's memory, still counted for a while (an orphan: gone)
            gprocs.append({"pid": OOM_PID, "gpu_uuid": "GPU-3", "used_mib": 40_000})
        # a loader that left the group but not the session: a member by its session
        rows.append({"pid": 920, "ppid": procs_group, "pgid": 920, "sid": R2,
                     "cmd": "r2 loader"})  # fmt: skip
    if 10 <= i < 40 or 100 <= i < 120:  # someone else's job under a daemon: foreign
        rows.append({"pid": 8888, "ppid": 100, "pgid": 100, "sid": 100, "cmd": "bob.py"})
        gprocs.append({"pid": 8888, "gpu_uuid": "GPU-6", "used_mib": 3000})
    if 20 <= i < 50 or 150 <= i < 170:  # reparented to init: an orphan
        rows.append({"pid": 7777, "ppid": 1, "pgid": 7777, "sid": 7777, "cmd": "nb.py"})
        gprocs.append({"pid": 7777, "gpu_uuid": "GPU-5", "used_mib": 2000})
    used = {g["gpu_uuid"] for g in gprocs}
    gpus = [{"index": g, "uuid": f"GPU-{g}", "util": 90 if f"GPU-{g}" in used else 0,
             "mem_used_mib": 45_000 if f"GPU-{g}" in used else 0, "mem_total_mib": 81_559}
            for g in range(8)]  # fmt: skip
    ooms = [{"time": 1.0, "pid": R2 + 2, "name": "python", "text": "Killed process"}]
    kernel = {"source": "kmsg", "xids": [], "ooms": ooms if 180 <= i < 200 else []}
    machine = {"oom_kill": 0 if i < 85 else 1, "kernel_log": kernel}
    return {"time": t, "host": "box", "telemetry": {"source": "nvml"}, "gpus": gpus,
            "gpu_procs": gprocs, "procs": rows, "run": run, "machine": machine}  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["dicts", "change-lists"])
def test_window_copies_answer_what_later_diagnoses_ask_of_them(stream: bool) -> None:
    tracker = Tracker(TOPO, DEFAULT)
    docs = [_relaunch(i) for i in range(240)]
    given = _stream(iter(docs)) if stream else map(Snapshot.from_dict, docs)
    plain: list[Snapshot] = []
    earlier = None
    codes: set[str] = set()
    named_early = 0  # OOM findings naming the rank killed before the record named its group
    for doc, snap in zip(docs, given, strict=True):
        got = tracker.add(snap)
        plain.append(Snapshot.from_dict(doc))
        want = diagnose(plain[-120:], TOPO, DEFAULT, tracker.progress, True, earlier)
        assert got == want, doc["time"]
        earlier = want
        codes |= {f.code for f in got.findings} | {c for g in got.gpus for c in g.codes}
        named_early += any(
            f.code == "oom-killed" and f"pid {OOM_PID} (r2 rank 3)" in f.message
            for f in got.findings
        )
    assert {"oom-killed", "orphan-process", "foreign-process", "run-exited"} <= codes, codes
    assert named_early > 30  # from i=85 until the samples before 78 leave the window
