from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dflash_train.topology import Topology, TopologyError, parse_indices


def test_default_is_five_target_three_drafter() -> None:
    t = Topology()
    assert t.target == (0, 1, 2, 3, 4) and t.drafter == (5, 6, 7)
    assert [t.role(i) for i in (0, 5, 8)] == ["target", "drafter", "unassigned"]


@pytest.mark.parametrize(
    ("spec", "target", "drafter"),
    [
        ("0-4:5-7", (0, 1, 2, 3, 4), (5, 6, 7)),
        ("0,1,2:3", (0, 1, 2), (3,)),
        ("0-3:4-7", (0, 1, 2, 3), (4, 5, 6, 7)),
        ("0-5:6,7", (0, 1, 2, 3, 4, 5), (6, 7)),
        (" 1 , 3-4 : 7 ", (1, 3, 4), (7,)),
    ],
)
def test_parse(spec: str, target: tuple[int, ...], drafter: tuple[int, ...]) -> None:
    t = Topology.parse(spec)
    assert (t.target, t.drafter) == (target, drafter)
    assert Topology.parse(t.spec()) == t


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("0-4:4-7", "both target and drafter"),
        ("0--1:5", "negative"),
        ("-1:5", "negative"),
        ("a:5", "not a GPU index"),
        ("0-4", "separated by ':'"),
        ("3-1:5", "backwards"),
        ("0,0:1", "twice"),
    ],
)
def test_parse_errors(spec: str, needle: str) -> None:
    with pytest.raises(TopologyError, match=needle):
        Topology.parse(spec)


def test_from_lists_rejects_bad_values() -> None:
    assert Topology.from_lists([0, 1], [2]).drafter == (2,)
    for bad in ([-1], ["0"], [True], [1.5]):
        with pytest.raises(TopologyError):
            Topology.from_lists(bad, [7])
    with pytest.raises(TopologyError, match="both"):
        Topology.from_lists([1], [1])


def test_shared_roles_allowed_only_when_asked() -> None:
    assert Topology.parse("0:0", allow_shared=True).drafter == (0,)


@given(st.text(max_size=30))
def test_parse_indices_never_crashes_unexpectedly(text: str) -> None:
    try:
        out = parse_indices(text)
    except TopologyError:
        return
    assert all(isinstance(i, int) and i >= 0 for i in out)
