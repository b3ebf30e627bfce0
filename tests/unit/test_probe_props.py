"""Property tests: the probe's parsers never raise on arbitrary text or bytes."""

from __future__ import annotations

import os
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from dflash_tui.core.probe import main as probe
from dflash_tui.core.probe.main import RunFiles, TailReader, app_rows, conv, gpu_rows, parse_stat

FIELDS = [f for f, _, _ in probe.GPU_FIELDS]
# Text that looks like nvidia-smi output: digits, separators, placeholders, odd characters.
csvish = st.lists(
    st.sampled_from(
        ["0", "12", "-3", "1e3", "0x0004", "nan", "inf", ", ", ",", "[N/A]", "N/A", " MiB", "\n",
         "[Not Supported]", "P0", "GPU-x", "\r", "\xff", "\x00", "é", "   "]
    ) | st.text(max_size=5),
    max_size=60,
).map("".join)  # fmt: skip


@given(st.text(max_size=40), st.sampled_from(["int", "float", "str", "hex"]))
def test_conv_raises_only_value_error(raw: str, kind: str) -> None:
    try:
        v = conv(raw, kind)
    except ValueError:
        return
    assert v is None or isinstance(v, int | float | str)
    if isinstance(v, float):
        assert v == v and abs(v) != float("inf")


@given(st.one_of(st.binary(max_size=300), csvish.map(lambda s: s.encode("utf-8", "replace"))))
@settings(max_examples=300)
def test_gpu_and_app_rows_never_raise(data: bytes) -> None:
    errors: list[str] = []
    for fields in (FIELDS, probe.SAFE_FIELDS):
        for g in gpu_rows(data, fields, errors):
            assert isinstance(g["index"], int) and g["index"] >= 0
            assert set(g) == {key for _, key, _ in probe.GPU_FIELDS}
    for a in app_rows(data, errors):
        assert isinstance(a["pid"], int) and isinstance(a["name"], str)
    assert all(isinstance(e, str) for e in errors)


@given(st.text(max_size=400))
@settings(max_examples=300)
def test_parse_stat_never_raises(text: str) -> None:
    res = parse_stat(text)
    assert res is None or isinstance(res["pid"], int)


@given(
    st.text(max_size=20),
    st.integers(0, 2**31),
    st.integers(0, 2**31),
    st.sampled_from("RSDZTI"),
    st.integers(0, 2**62),
)
def test_parse_stat_round_trip_with_any_comm(
    comm: str, pid: int, ppid: int, state: str, start: int
) -> None:
    rest = [state, ppid, 7, 8, 0, -1, 0, 0, 0, 0, 0, 3, 4, 0, 0, 20, 0, 1, 0, start, 0, 9]
    res = parse_stat(f"{pid} ({comm}) " + " ".join(map(str, rest)) + "\n")
    assert res is not None
    assert (res["pid"], res["comm"], res["state"], res["ppid"]) == (pid, comm, state, ppid)
    assert (res["pgid"], res["sid"], res["ticks"], res["start_ticks"]) == (7, 8, 7, start)


@given(st.binary(max_size=60))
def test_run_files_never_raise(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        for name in ("pid", "exit", "started_at"):
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        errors: list[str] = []
        rf = RunFiles(d, "r", errors)
        for name, kinds in (
            ("pid", (int, int, int)),
            ("exit", (int, float)),
            ("started_at", (float,)),
        ):
            vals = rf.numbers(name, kinds)
            assert len(vals) == len(kinds)
            assert all(
                v is None or isinstance(v, kind) for v, kind in zip(vals, kinds, strict=True)
            )


@given(st.lists(st.binary(max_size=40), max_size=12))
@settings(max_examples=150, deadline=None)
def test_log_tail_sends_each_complete_line_once(chunks: list[bytes]) -> None:
    """Whatever is appended, in whatever pieces, the tail sends exactly the complete lines."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "log")
        open(path, "wb").close()
        tail, sent = TailReader(path, tail_first=False), []
        for chunk in chunks:
            with open(path, "ab") as f:
                f.write(chunk)
            out = tail.sample(65536, 5000)
            assert not out["truncated"] and out["skipped_bytes"] == 0
            sent += out["lines"]
        complete = b"".join(chunks).split(b"\n")[:-1]
        assert sent == [probe.decode_line(x) for x in complete]
