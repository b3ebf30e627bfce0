"""No import circle among the modules of tui/: every import counts, at the top of a module, inside
a function, and under `if TYPE_CHECKING:`, since a circle hidden by a local import still ties the
two modules' meaning together. The cycle finder is tried on a planted package first, so a suite
that stays green is not a finder that cannot see."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TUI = ROOT / "tui"
IMPORT_NAME = "dflash_tui"


def module_names(package: Path, import_name: str) -> dict[str, Path]:
    """Each module's dotted name (a package's is that of its __init__) -> its file."""
    names: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join([import_name, *parts])] = path
    return names


def imported_names(tree: ast.Module, module: str, is_package: bool) -> set[str]:
    """Every dotted name the module imports, anywhere in its body, relative ones resolved;
    `from a import b` yields `a.b`, which names a module or, when b is a name defined in a, is
    resolved to `a` by the caller."""
    here = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def import_graph(package: Path, import_name: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports. An import of a name inside a module
    counts as an import of that module; an import of a package counts as its __init__."""
    names = module_names(package, import_name)
    graph: dict[str, set[str]] = {}
    for module, path in names.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for name in imported_names(tree, module, is_package):
            while name and name not in names:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def _strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's components, iteratively (a deep package must not hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part: list[str] = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        part.append(top)
                        if top == node:
                            break
                    found.append(sorted(part))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def _path_back(graph: Mapping[str, Iterable[str]], start: str, members: set[str]) -> list[str]:
    """The shortest circle through `start` inside one component, for a readable message."""
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt: list[str] = []
        for node in frontier:
            for child in sorted(graph.get(node, ())):
                if child not in members:
                    continue
                if child == start:
                    circle = [node]
                    while circle[-1] != start:
                        circle.append(parents[circle[-1]])
                    return [start, *reversed(circle[:-1]), start]
                if child not in parents:
                    parents[child] = node
                    nxt.append(child)
        frontier = nxt
    return [start, start]


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """One circle per group of modules that import each other, each shown as a path
    `a -> b -> ... -> a` from the group's first module."""
    return [
        _path_back(graph, part[0], set(part))
        for part in _strongly_connected(graph)
        if len(part) > 1
    ]


def test_the_finder_sees_planted_circles() -> None:
    graph = {
        "p.a": {"p.b"},
        "p.b": {"p.c"},
        "p.c": {"p.a", "p.d"},
        "p.d": set(),
        "p.e": {"p.f"},
        "p.f": {"p.e"},
        "p.g": {"p.d"},
    }
    assert sorted(cycles(graph)) == [["p.a", "p.b", "p.c", "p.a"], ["p.e", "p.f", "p.e"]]
    assert cycles({"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": set()}) == []


def test_the_graph_counts_local_and_type_checking_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .leaf import thing\n")
    (pkg / "sub" / "leaf.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from ..top import Top\n"
        "thing = 1\n"
    )
    (pkg / "top.py").write_text("def f():\n    from pkg.sub import leaf\n    return leaf\n")
    (pkg / "free.py").write_text("import os\nfrom pkg import top\nfrom pkg.sub import thing\n")
    graph = import_graph(pkg, "pkg")
    assert graph["pkg.sub"] == {"pkg.sub.leaf"}
    assert graph["pkg.sub.leaf"] == {"pkg.top"}
    assert graph["pkg.top"] == {"pkg.sub.leaf"}
    assert graph["pkg.free"] == {"pkg.top", "pkg.sub"}
    assert sorted(map(sorted, map(set, cycles(graph)))) == [["pkg.sub.leaf", "pkg.top"]]


def test_no_import_circle_among_tui_modules() -> None:
    graph = import_graph(TUI, IMPORT_NAME)
    assert len(graph) > 100
    groups = [part for part in _strongly_connected(graph) if len(part) > 1]
    found = [" -> ".join(c) for c in cycles(graph)]
    assert not found, "import circles:\n" + "\n".join(
        f"{circle}\n    (one group, each reaching the others: {', '.join(part)})"
        for circle, part in zip(found, groups, strict=True)
    )
