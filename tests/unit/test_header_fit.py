"""The header's line fitting (tui/app/host/header.py ``fit``): the parts it shortens, in rank
order, and what it gives back, against the rule written out plainly (every total measured
again at each step)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.text import Text

from dflash_tui.app.host.header import Part, fit, part


def fit_plainly(parts: list[Part], width: int) -> str:
    """The rule: shorten the lowest rank (the rightmost of equals) while the line is too wide,
    then give back, highest rank first, every longer form that fits again."""
    chosen = [0] * len(parts)

    def total() -> int:
        return sum(p.forms[c].cell_len for p, c in zip(parts, chosen, strict=True))

    while width > 0 and total() > width:
        left = [i for i, p in enumerate(parts) if chosen[i] < len(p.forms) - 1]
        if not left:
            break
        i = min(left, key=lambda i: (parts[i].rank, -i))
        chosen[i] += 1
    for i in sorted(range(len(parts)), key=lambda i: (-parts[i].rank, i)):
        while chosen[i] > 0:
            chosen[i] -= 1
            if total() > width:
                chosen[i] += 1
                break
    return "".join(p.forms[c].plain for p, c in zip(parts, chosen, strict=True))


# Forms longest first, as the header makes them; wide characters count two cells.
_forms = st.lists(st.text(alphabet="ab界 ", max_size=12), min_size=1, max_size=4).map(
    lambda xs: sorted(xs, key=len, reverse=True)
)
_parts = st.lists(
    st.tuples(_forms, st.sampled_from([15, 20, 30, 40, 44, 100])), min_size=0, max_size=9
)


@settings(max_examples=400, deadline=None)
@given(_parts, st.integers(min_value=0, max_value=90))
def test_fit_picks_the_forms_the_rule_picks(spec: list[tuple[list[str], int]], width: int) -> None:
    parts = [Part([Text(f) for f in forms], rank) for forms, rank in spec]
    assert fit(parts, width).plain == fit_plainly(parts, width)


def test_the_lowest_rank_goes_first_and_room_made_later_is_given_back() -> None:
    parts = [
        part("RUNNING"),
        part(" long-detail", "", 20, " d", ""),
        part(" host-name", "", 40, " h"),
    ]
    assert fit(parts, 100).plain == "RUNNING long-detail host-name"
    # 29 cells into 20: the detail (rank 20) shortens first, to " d" (19 cells): fits.
    assert fit(parts, 20).plain == "RUNNING d host-name"
    # Into 12: the detail to nothing, then the host to " h"; the detail's " d" fits again.
    assert fit(parts, 12).plain == "RUNNING d h"
    # Nothing shortens below the never-shortened parts: the line stays over the width.
    assert fit(parts, 3).plain == "RUNNING h"
    assert fit(parts, 0).plain == "RUNNING long-detail host-name"  # width unknown
