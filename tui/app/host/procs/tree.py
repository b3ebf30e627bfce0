"""The process tree, updated in place: nodes are keyed by PID and relabelled, added or removed,
so what the user expanded (and the cursor) survives every sample.

The run's process group is highlighted, GPU holders carry their GPU indices, zombies and
uninterruptible (D-state) processes are flagged: a D-state worker survives SIGKILL and keeps
its GPU memory, which is why a restart can wait on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from dflash_train.topology import format_indices
from dflash_tui.app.widgets.palette import Palette, palette_for
from dflash_tui.app.widgets.themed import follow_theme, unfollow_theme
from dflash_tui.core.base.rundir import group_members
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.base.text import safe_label
from dflash_tui.core.diagnosis.views import Diagnosis


@dataclass(frozen=True)
class ProcInfo:
    """What the tree knows of a node: enough for the kill dialog to name and verify it."""

    pid: int
    pgid: int
    start_ticks: int | None
    cmd: str
    state: str
    user: str
    in_run: bool
    gpus: tuple[int, ...]


def gpus_by_pid(diag: Diagnosis) -> dict[int, tuple[int, ...]]:
    """PID (in the probe's view) -> GPU indices it holds."""
    out: dict[int, list[int]] = {}
    for view in diag.gpus:
        for p in view.processes:
            pid = p.container_pid if p.container_pid is not None else p.pid
            out.setdefault(pid, []).append(view.index)
    return {k: tuple(v) for k, v in out.items()}


class ProcTree(Tree[ProcInfo]):
    """By default the run's processes, the GPU holders and Z/D processes (with the way to them
    from init); ``w`` shows the whole machine. ``h``/``l`` collapse/expand while it has the
    focus: a user navigating the tree never launches a run by accident."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("w", "app.whole_machine", "Whole machine"),
        Binding("l", "expand_here", "Expand", show=False),
        Binding("h", "collapse_here", "Collapse", show=False),
    ]
    DEFAULT_CSS = """
    ProcTree { height: 1fr; scrollbar-size-vertical: 1; }
    /* The last known processes while no sample comes: greyed (their tab says how old). */
    ProcTree.-stale { text-opacity: 50%; }
    """

    def __init__(self) -> None:
        super().__init__(Text("processes"), id="proc-tree")
        self.nodes: dict[int, TreeNode[ProcInfo]] = {}
        self.keys: dict[int, tuple[object, ...]] = {}  # what each label was drawn from
        self.parents: dict[int, int | None] = {}
        self.infos: dict[int, ProcInfo] = {}
        self.run_id: object = ()  # the run whose processes were last opened for the user
        self.open_path = True  # open the way to important processes (first sample, new run)
        self.guide_depth = 2
        self.show_root = False
        self.whole = False  # the whole machine, not only what matters to the run
        self.last: tuple[Snapshot, Diagnosis] | None = None

    def on_mount(self) -> None:
        follow_theme(self, self._relabel_all)
        self.root.expand()

    def on_unmount(self) -> None:
        unfollow_theme(self)

    def toggle_whole(self) -> None:
        """Whole machine on/off (``whole``); redraws from the last sample."""
        self.whole = not self.whole
        if self.last is not None:
            self.run_id = ()  # open the way to what matters again
            self.show(*self.last)

    def select_pid(self, pid: int) -> bool:
        """Put the cursor on ``pid`` (opening the way to it); False when it is not listed."""
        node = self.nodes.get(pid)
        if node is None:
            return False
        _expand_ancestors(node)
        self.call_after_refresh(self.move_cursor, node)  # its line exists once laid out
        return True

    def action_expand_here(self) -> None:
        node = self.cursor_node
        if node is not None and node.allow_expand:
            node.expand()

    def action_collapse_here(self) -> None:
        node = self.cursor_node
        if node is not None:
            (node if node.is_expanded or node.parent is None else node.parent).collapse()

    def show(self, snap: Snapshot, diag: Diagnosis) -> None:
        self.last = (snap, diag)
        procs = {p.pid: p for p in snap.procs}
        run_pids = {p.pid for p in group_members(diag.run, snap.procs)}
        holders = gpus_by_pid(diag)
        infos = {
            pid: ProcInfo(
                pid,
                p.pgid,
                p.start_ticks,
                p.cmd,
                p.state,
                p.user,
                pid in run_pids,
                holders.get(pid, ()),
            )
            for pid, p in procs.items()
        }
        parent_of = {
            pid: (p.ppid if p.ppid in procs and p.ppid != pid else None) for pid, p in procs.items()
        }
        if not self.whole:
            parent_of = _what_matters(parent_of, infos)
        infos = {pid: infos[pid] for pid in parent_of}
        run_id = diag.run.id if diag.run else None
        if run_id == self.run_id and parent_of == self.parents and infos == self.infos:
            return  # the same rows as drawn (most samples): no node to touch
        self._remove_stale(parent_of)
        # Open the way to what matters on the first sample and for a new run; otherwise the
        # user's expand/collapse is never overridden.
        self.open_path = run_id != self.run_id
        self.run_id = run_id
        pal = palette_for(self.app.current_theme)
        for pid in _parents_first(parent_of):
            self._place(pid, parent_of[pid], infos[pid], pal)
        self.infos = infos

    def show_stale(self, age: int | None) -> None:
        """No sample for ``age`` seconds (None: fresh): a PID listed may be gone by now."""
        self.set_class(age is not None, "-stale")

    def _remove_stale(self, parent_of: Mapping[int, int | None]) -> None:
        """Drop nodes whose process is gone or moved (reparented to init): re-added later."""
        for pid in list(self.nodes):
            if pid not in self.nodes:
                continue  # removed with an ancestor in this pass
            if pid not in parent_of or parent_of[pid] != self.parents.get(pid):
                node = self.nodes[pid]
                self._forget(node)
                node.remove()

    def _forget(self, node: TreeNode[ProcInfo]) -> None:
        for child in node.children:
            self._forget(child)
        if node.data is not None:
            self.nodes.pop(node.data.pid, None)
            self.keys.pop(node.data.pid, None)
            self.parents.pop(node.data.pid, None)

    def _place(self, pid: int, parent: int | None, info: ProcInfo, pal: Palette) -> None:
        key = (info.cmd, info.state, info.in_run, info.gpus, info.user, id(pal))
        node = self.nodes.get(pid)
        if node is None:
            anchor = (
                self.nodes[parent] if parent is not None and parent in self.nodes else self.root
            )
            important = info.in_run or bool(info.gpus) or info.state in ("Z", "D")
            node = anchor.add(_label(info, pal), data=info, expand=parent is None or important)
            if important and self.open_path:
                _expand_ancestors(node)
            self.nodes[pid], self.parents[pid], self.keys[pid] = node, parent, key
        elif self.keys.get(pid) != key:
            node.data = info
            node.set_label(_label(info, pal))
            self.keys[pid] = key
        else:
            node.data = info

    def _relabel_all(self) -> None:
        pal = palette_for(self.app.current_theme)
        for pid, node in self.nodes.items():
            if node.data is not None:
                node.set_label(_label(node.data, pal))
                self.keys[pid] = (*self.keys[pid][:-1], id(pal))

    def selected(self) -> ProcInfo | None:
        node = self.cursor_node
        return node.data if node is not None else None


def _what_matters(
    parent_of: Mapping[int, int | None], infos: Mapping[int, ProcInfo]
) -> dict[int, int | None]:
    """The run's processes and their children, GPU holders, Z/D processes, and the way to
    them from init; everything when none of these exists (the tree is never empty)."""
    important = {pid for pid, i in infos.items() if i.in_run or i.gpus or i.state in ("Z", "D")}
    if not important:
        return dict(parent_of)
    keep = set(important)
    for pid in parent_of:  # the run's subtree: whatever descends from one of its processes
        cur: int | None = parent_of[pid]
        seen = 0
        while cur is not None and seen < 256:
            if infos[cur].in_run:
                keep.add(pid)
                break
            cur, seen = parent_of.get(cur), seen + 1
    for pid in list(keep):  # the way from init
        cur, seen = parent_of.get(pid), 0
        while cur is not None and cur not in keep and seen < 256:
            keep.add(cur)
            cur, seen = parent_of.get(cur), seen + 1
    return {pid: parent for pid, parent in parent_of.items() if pid in keep}


def _expand_ancestors(node: TreeNode[ProcInfo]) -> None:
    parent = node.parent
    while parent is not None:
        if not parent.is_expanded:
            parent.expand()
        parent = parent.parent


def _parents_first(parent_of: Mapping[int, int | None]) -> list[int]:
    """PIDs ordered so that every parent comes before its children (cycles broken)."""
    depth: dict[int, int] = {}
    for pid in parent_of:
        chain: list[int] = []
        cur: int | None = pid
        while cur is not None and cur not in depth and len(chain) < 256:
            chain.append(cur)
            nxt = parent_of.get(cur)
            cur = None if nxt in chain else nxt
        base = depth.get(cur, -1) if cur is not None else -1
        for i, p in enumerate(reversed(chain)):
            depth[p] = base + 1 + i
    return sorted(parent_of, key=lambda p: (depth[p], p))


def _label(info: ProcInfo, pal: Palette) -> Text:
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"{info.pid} ", pal.fg("ok" if info.in_run else "muted", bold=info.in_run))
    if info.state == "Z":
        t.append(" ZOMBIE ", pal.chip("error"))
        t.append(" ")
    elif info.state == "D":
        t.append(" D-STATE ", pal.chip("warning"))
        t.append(" ")
    if info.gpus:
        t.append(f" {gpu_list(info.gpus)} ", pal.chip("info"))
        t.append(" ")
    if info.in_run:
        t.append(" RUN ", pal.chip("ok"))
        t.append(" ")
    style = pal.fg("ok", bold=True) if info.in_run else None
    t.append(safe_label(info.cmd or "?", 160), style or "")
    t.append(f"  {safe_label(info.user, 16)}", pal.fg("muted"))
    return t


def gpu_list(gpus: tuple[int, ...]) -> str:
    """(0, 1, 2, 3, 5) -> 'GPUs 0-3,5'."""
    vals = sorted(set(gpus))
    return ("GPU " if len(vals) == 1 else "GPUs ") + format_indices(vals)
