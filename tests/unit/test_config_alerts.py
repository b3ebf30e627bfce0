"""The [alerts] table: validated like every other table (unknown keys and codes are errors)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import config_file

from dflash_tui.core.base.alert_config import EVENTS, FINDING_CODES, AlertSettings
from dflash_tui.core.base.codes import GPU_LABELS
from dflash_tui.core.base.config import ConfigError, load_file


def load(tmp_path: Path, text: str) -> AlertSettings:
    return load_file(config_file(tmp_path, text)).alerts


def test_defaults_send_nothing(tmp_path: Path) -> None:
    a = load(tmp_path, "")
    assert not a.enabled and a.on == EVENTS and a.min_interval_s == 300 and a.log_lines == 20
    assert a.terminal == "off"  # the terminal notification is opt-in


def test_a_full_table(tmp_path: Path) -> None:
    a = load(tmp_path, """
[alerts]
command = "mail -s dflash me"
webhook = "https://ntfy.example/"
topic = "run-7"
on = ["restart", "fatal", "near-oom", "restart"]
min_interval_s = { default = 600, restart = 30 }
log_lines = 5
timeout_s = 3
terminal = "osc777"
""")  # fmt: skip
    assert a.enabled and a.command == "mail -s dflash me" and a.topic == "run-7"
    assert a.on == ("restart", "fatal", "near-oom")
    assert a.interval("restart") == 30 and a.interval("fatal") == 600
    assert a.log_lines == 5 and a.timeout_s == 3 and a.terminal == "osc777"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("webhok = 'http://x'", "unknown key 'alerts.webhok'"),
        ("on = ['restarts']", "unknown code 'restarts'"),
        ("webhook = 'ftp://x'", "http:// or https://"),
        ("min_interval_s = -1", "min_interval_s must be"),
        ("min_interval_s = { restrt = 5 }", "unknown code 'restrt'"),
        ("log_lines = true", "log_lines"),
        ("timeout_s = 0", "timeout_s must be above 0"),
        ("command = ''", "alerts.command must be a non-empty string"),
        ("on = 'fatal'", "must be a list"),
        ("terminal = 'osc8'", "alerts.terminal must be one of: off, bell, osc9, osc777"),
        ("terminal = true", "alerts.terminal must be one of"),
    ],
)
def test_bad_values_are_errors(tmp_path: Path, body: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        load(tmp_path, f"[alerts]\n{body}\n")


def test_every_label_may_be_asked_for() -> None:
    assert set(GPU_LABELS) - {"ok"} <= set(FINDING_CODES)
