"""docs/internals.md opens with a map, "Where does it live": every path its table names must
exist in the repo, so a file moved or renamed without the map fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INTERNALS = ROOT / "docs" / "internals.md"


def map_rows() -> list[str]:
    """The table rows of the "Where does it live" section (up to the next heading)."""
    text = INTERNALS.read_text(encoding="utf-8")
    section = text.split("## Where does it live", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]


def paths_in(row: str) -> list[str]:
    """The backquoted repo paths of a row's "where" cell (a word with a slash and a dot)."""
    where = row.strip().strip("|").split("|")[-1]
    return [p for p in re.findall(r"`([^`\s]+)`", where) if "/" in p and "." in p]


def test_the_map_opens_the_page_and_names_at_least_15_behaviours() -> None:
    text = INTERNALS.read_text(encoding="utf-8")
    first_section = text.split("\n## ", 2)[1]
    assert first_section.startswith("Where does it live")
    rows = map_rows()[1:]  # the header row aside
    assert len(rows) >= 15
    for row in rows:
        assert 1 <= len(paths_in(row)) <= 3, row  # one or two files (a path of three steps)


def test_every_path_in_the_map_exists() -> None:
    missing = [p for row in map_rows()[1:] for p in paths_in(row) if not (ROOT / p).exists()]
    assert missing == [], f"docs/internals.md's map names files that are gone: {missing}"
