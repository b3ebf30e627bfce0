"""Sum the control fault suite's tally (the lines ``control_faults.record`` writes).

    DFLASH_FAULT_TALLY=/tmp/t.jsonl .venv/bin/python -m pytest \
        tests/faults/test_faults_launch_room.py \
        tests/faults/test_faults_control_races.py -q
    python3 tests/faults/tally.py /tmp/t.jsonl

prints one Markdown table: per fault and in total, tried, survived, doubled, untracked, false.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

KEYS = ("tried", "survived", "doubled", "untracked", "false")


def main(path: str) -> None:
    rows: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(KEYS, 0))
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            row = rows[r["fault"]]
            row["tried"] += 1
            row["survived"] += int(r["survived"])
            for k in ("doubled", "untracked", "false"):
                row[k] += int(r[k])
    total = dict.fromkeys(KEYS, 0)
    print("| fault | " + " | ".join(KEYS) + " |")
    print("| --- " * (len(KEYS) + 1) + "|")
    for fault, row in rows.items():
        print(f"| {fault} | " + " | ".join(str(row[k]) for k in KEYS) + " |")
        for k in KEYS:
            total[k] += row[k]
    print("| **total** | " + " | ".join(str(total[k]) for k in KEYS) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
