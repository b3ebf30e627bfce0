"""The app's key table: every main-screen key with its action, footer text and help text,
the bindings made from it, and which keys are destructive, hidden from the footer, or only
there with several hosts or with the History tab. A config's ``[keys]`` remaps a binding by
its id, the action's name here (tui/app/keys/keymap.py; core/base/config_keys.py KEY_IDS lists
the same ids, a test checks)."""

from __future__ import annotations

from textual.binding import Binding

# (key, action, footer text, help text). Destructive ones are listed in DESTRUCTIVE.
KEYS: tuple[tuple[str, str, str, str], ...] = (
    ("l", "launch", "Launch", "launch the run (returns once the job is seen alive)"),
    ("k", "kill", "Kill", "kill the run's process group (confirm names PIDs and GPUs)"),
    ("r", "restart", "Restart", "kill, wait for GPU memory release, launch again (confirm)"),
    ("K", "kill_process", "Kill PID", "kill the process selected in the tree (confirm)"),
    ("A", "auto_restart", "Auto-restart", "auto-restart after a crash on/off (config [restart])"),
    ("R", "refresh", "Refresh", "sample every host now, not waiting for the interval"),
    ("slash", "filter", "Filter", "edit the log filter (regex; enter applies, empty = off)"),
    ("a", "toggle_filter", "All/filter", "show all log lines / only the filtered ones"),
    ("f", "follow", "Follow", "follow the end of the logs on/off"),
    ("s", "search", "Search", "search the logs (regex; n / N: next / previous match)"),
    ("W", "wrap", "Wrap", "wrap long log lines / cut them (← → scroll)"),
    ("S", "save_view", "Save view", "save the log lines shown to a file (path in a notification)"),
    ("v", "pager", "Pager", "open the whole log in $PAGER (a terminal-safe copy; q returns)"),
    ("tab", "focus_next", "Areas", "move between areas (GPUs, logs, findings, tree, timeline)"),
    ("t", "next_theme", "Theme", "next theme (dflash-dark, -light, -contrast, yours)"),
    (
        "e",
        "other_tab",
        "Procs/Events",
        "switch the process tree, the event timeline, the history plots",
    ),
    ("w", "whole_machine", "All procs", "tree: the whole machine / the run's and GPU holders"),
    ("p", "gpu_procs", "GPU procs", "GPU process table (o sort, / filter, space tag, K kill)"),
    ("c", "compact", "Compact", "GPU grid: one line per GPU / full panels"),
    ("plus", "zoom", "Zoom", "the focused area (log, tree, findings, ...) fills the screen / back"),
    ("question_mark", "help", "Help", "this help"),
    ("q", "quit", "Quit (run stays)", "quit the app; the run keeps running"),
)
DESTRUCTIVE = frozenset({"launch", "kill", "restart", "kill_process", "auto_restart"})
HIDDEN = frozenset(
    {
        "toggle_filter",
        "other_tab",
        "auto_restart",
        "whole_machine",
        "gpu_procs",
        "compact",
        "zoom",
        "search",
        "wrap",
        "save_view",
        "pager",
    }
)  # in the help and the palette; the footer is full
# The footer's order: help and quit first, so a narrow terminal (80 columns) still shows them
# whatever is cut at the right. The help keeps KEYS' order.
FIRST = ("help", "quit")
FOOTER_KEYS = [k for a in FIRST for k in KEYS if k[1] == a] + [k for k in KEYS if k[1] not in FIRST]
KEY_NAMES = {"slash": "/", "question_mark": "?", "plus": "+"}
# Host keys: only with two or more hosts (check_action hides them otherwise).
HOST_ACTIONS = frozenset({"next_host", "prev_host", "show_host"})
HOST_HELP: tuple[tuple[str, str], ...] = (
    ("[ / ]", "show the previous / next host (the overview highlights it)"),
    ("1-9", "show host n (its row in the overview); l, k, r, K act on the shown host only"),
)


# The History tab's keys: only while it is shown (check_action hides them otherwise).
HISTORY_ACTIONS = frozenset({"history_zoom", "history_pan"})
HISTORY_HELP: tuple[tuple[str, str], ...] = (
    ("z", "History: zoom, cycling whole run / last 1 h / last 5 min"),
    ("< / >", "History: pan half a window back / forward in time"),
)


def app_action(action: str) -> str:
    """What a key of the table calls: a run key goes to the host's control, in one action
    (``app.control``) that builds its request; the others are the app's own actions."""
    return f"app.control('{action}')" if action in DESTRUCTIVE else f"app.{action}"


# The main screen's bindings, in the footer's order (a remapped one keeps its place).
MAIN_BINDINGS: tuple[Binding, ...] = (
    *(
        Binding(key, app_action(action), text, show=action not in HIDDEN, id=action)
        for key, action, text, _ in FOOTER_KEYS[: len(FIRST)]
    ),
    # Early, so the footer shows it (only with several hosts: check_action hides it).
    Binding("right_square_bracket", "app.next_host", "Host", key_display="[ ]", id="next_host"),
    # Early too, and only while the History tab is shown (check_action hides them).
    Binding("z", "app.history_zoom", "Zoom", id="history_zoom"),
    Binding(
        "less_than_sign", "app.history_pan(-1)", "Pan", key_display="< >", id="history_earlier"
    ),
    Binding("greater_than_sign", "app.history_pan(1)", "Pan later", False, id="history_later"),
    *(
        Binding(key, app_action(action), text, show=action not in HIDDEN, id=action)
        for key, action, text, _ in FOOTER_KEYS[len(FIRST) :]
    ),
    Binding("escape", "app.escape", "Cancel", show=False),
    Binding("n", "app.search_step(True)", "Next match", show=False, id="search_next"),
    Binding("N", "app.search_step(False)", "Previous match", False, id="search_previous"),
    Binding("shift+tab", "app.focus_previous", "Focus Previous", show=False),
    Binding("ctrl+c,super+c", "screen.copy_text", "Copy selected text", show=False),
    Binding("left_square_bracket", "app.prev_host", "Previous host", False, id="prev_host"),
    *(Binding(str(n), f"app.show_host({n - 1})", f"Host {n}", show=False) for n in range(1, 10)),
)
