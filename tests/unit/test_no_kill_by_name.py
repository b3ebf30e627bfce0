"""Nothing in the project kills by name (DESIGN.md: `pkill -f python3` kills the shell running
it and other users' jobs). Processes are signalled only as a recorded, verified process group.

Every text file of the project is scanned (code, scripts, CI, config, docs); a line may name
these tools only to say "never", and this file is exempt.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIP_DIRS = {".git", ".venv", "venv", "__pycache__", "node_modules", "__snapshots__", "build"}
# Recorded real machine output (process tables of the device harness): data, not our code.
RECORDINGS = Path("tests") / "fixtures"
TEXT = {".py", ".sh", ".toml", ".cfg", ".ini", ".yml", ".yaml", ".md", ".txt", ".json", ""}
BY_NAME = re.compile(
    r"\b(pkill|killall|pgrep|pidof)\b"  # the tools that pick processes by name
    r"|xargs\s+(-\S+\s+)*kill\b"  # ps ... | grep ... | xargs kill
    r"|\bkill\b[^\n]*\$\(\s*ps\b"  # kill $(ps ... | grep ...)
    r"|process_iter\("  # psutil: walking every process to match a name
)


def project_files() -> list[Path]:
    out = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts):
            continue
        if rel.is_relative_to(RECORDINGS):
            continue
        if path.is_file() and path.suffix in TEXT and path != Path(__file__).resolve():
            out.append(path)
    return out


def offences(text: str) -> list[str]:
    return [
        line.strip()
        for line in text.splitlines()
        if BY_NAME.search(line) and "never" not in line.lower()
    ]


def test_the_pattern_catches_kill_by_name() -> None:
    bad = [
        "pkill -9 -f python3; sleep 3",
        "killall python3",
        "kill -9 $(pgrep -f train)",
        "ps aux | grep train | awk '{print $2}' | xargs -r kill",
        "kill $( ps -o pid= -C python3 )",
        "for p in psutil.process_iter(['name']):",
    ]
    assert all(offences(b) for b in bad)
    good = ["kill -TERM -4242", "os.killpg(pgid, signal.SIGTERM)", "never pkill: it kills by name"]
    assert not any(offences(g) for g in good)


def test_no_kill_by_name_anywhere_in_the_project() -> None:
    files = project_files()
    assert any(f.name == "control.sh" for f in files), "the scan must see tui/core/"
    found = {
        str(f.relative_to(ROOT)): hits
        for f in files
        if (hits := offences(f.read_text(encoding="utf-8", errors="replace")))
    }
    assert not found, f"kill by name found (signal the run's recorded group instead): {found}"
