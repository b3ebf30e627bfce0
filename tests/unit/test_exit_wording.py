"""One wording of a run's exit everywhere a command prints it: ``rundir.exit_text``
(``exit 3: exited with status 3``) in ``status``'s table, ``status --watch``'s run line,
``wait``'s sentence and ``status --replay``'s line, as in findings and the timeline."""

from __future__ import annotations

import pytest

from dflash_tui.cli import replay, until, watch
from dflash_tui.cli.status_doc import host_document
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.rundir import exit_text
from dflash_tui.core.base.snapshot import Snapshot

T0 = 1_800_000_000.0


def sample(code: int) -> Snapshot:
    run = {"id": "r1", "dir": "/runs/r1", "pgid": 4242, "started_at": T0 - 60,
           "exit_code": code, "ended_at": T0 - 1}  # fmt: skip
    return Snapshot.from_dict({"time": T0, "run": run})


@pytest.mark.parametrize("code", [0, 1, 3, 137])
def test_every_command_words_an_exit_as_exit_text(code: int) -> None:
    host = HostConfig()
    doc, parts = host_document(host, sample(code), True)
    assert doc["run"]["exit_code"] == code, doc["run"]
    words = exit_text(code)
    assert words in str(parts[0]), parts[0]
    assert words in watch._run_line(doc["run"])
    _, line = until.verdict_on(doc, until.parse_until("exited"))
    assert words in line, line
    assert words in replay.doc_line(doc)
