"""supervisor.sh's answers end with `end`, as control.sh's do: one cut short is an error, not
an answer (a lost `policy` line would drop a viewer's request without a word)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from dflash_tui.core.control import supervisor_files as files
from dflash_tui.core.control.script import ControlError
from dflash_tui.core.link.transport import LocalTransport


def test_a_whole_answer_ends_with_end_and_one_cut_short_is_refused() -> None:
    whole = 'status ok\npolicy {"enabled": false}\nend\n'
    assert files.parse_reply(whole).policy == {"enabled": False}
    with pytest.raises(ControlError, match="cut short"):
        files.parse_reply("status ok\n")  # the policy line and the end never came


def test_every_verb_of_the_real_script_ends_its_answer(tmp_path: Path) -> None:
    t, root = LocalTransport(), str(tmp_path / "runs")
    (tmp_path / "runs").mkdir()
    owner = {"pid": 1, "host": "here"}

    async def verbs() -> list[files.Reply]:
        got = [await files.lock(t, root, "tok", owner)]
        (tmp_path / "runs" / "supervisor.policy.json").write_text('{"enabled": true}\n')
        got.append(await files.run(t, "beat", root, "tok", json.dumps({"pid": 1})))
        got.append(await files.run(t, "beat", root, "other", "{}"))  # lost: exits early
        got.append(await files.run(t, "read", root))
        return got

    locked, beat, lost, read = asyncio.run(verbs())
    assert (locked.status, beat.status, lost.status, read.status) == (
        "locked",
        "ok",
        "lost",
        "read",
    )
    assert beat.policy == {"enabled": True}


def test_a_record_is_padded_to_whole_blocks_with_room_and_reads_back() -> None:
    """Every record leaves room for a bigger next one (written in place on a full disk)."""
    for n in (0, 100, 3000, 5000):
        doc = {"pid": 1, "history": ["x" * n]}
        line = files.padded(doc)
        assert (len(line) + 1) % files.RECORD_BLOCK == 0
        assert len(line) - len(json.dumps(doc, separators=(",", ":"))) >= files.RECORD_SPARE - 1
        assert json.loads(line) == doc  # the padding is JSON's whitespace
    reply = files.parse_reply("status inplace\nwhy No space left on device\nend\n")
    assert (reply.status, reply.why) == ("inplace", "No space left on device")
