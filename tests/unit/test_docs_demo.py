"""The docs say what the demo does: the number of steps its command runs."""

from __future__ import annotations

import re
from pathlib import Path

from dflash_tui.core.base.config_types import DEFAULT_COMMAND, DEMO_STEPS

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_give_the_demos_step_count() -> None:
    assert f"--steps {DEMO_STEPS}" in DEFAULT_COMMAND
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"The demo's run is {DEMO_STEPS} steps" in readme
    for doc in ("README.md", "docs/app.md", "docs/pipeline.md"):
        text = " ".join((ROOT / doc).read_text().split())
        # Said of the demo, any other count is wrong (the tiny preset alone is 60 steps).
        for m in re.finditer(r"demo[^.]{0,80}?(\d+) steps", text):
            assert m.group(1) in ("60", str(DEMO_STEPS)), (doc, m.group(0))
        assert "The run finished its 60 steps" not in text, doc
