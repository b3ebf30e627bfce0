"""Terminal-safe text, the one home for it, and short number formats (pure; stdlib only).

Log lines come from programs we do not control. Before they reach a widget they lose every
escape sequence and control character (a terminal would act on them), carriage-return progress
bars collapse to their last state, and giant lines are cut. The result is plain text: callers
must still never hand it to a markup parser (we use ``Text``/``Log``, which do not parse).
Paths and messages printed by the command line keep their characters visible instead
(``printable``: a control character becomes ``\\xNN``), so nothing is silently dropped there.
``terminal_safe`` is the gate for whole messages, several lines at once (the command line's
output, the app's notifications).
"""

from __future__ import annotations

import re

MAX_LINE_CHARS = 4096  # what one displayed line keeps; the rest is summarised

# ESC-introduced sequences: CSI, OSC (BEL/ST-terminated or unterminated), DCS/SOS/PM/APC, and
# the two/three-byte forms. Anything left over (a lone ESC) falls to the control-char pass.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI ... final byte (final optional: cut sequences)
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC ... BEL or ST
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC ... ST
    r"|\x1b[ -/]*[0-~]"  # nF and Fe/Fp/Fs escapes
)
# C0 controls (tab kept), DEL, C1 controls (8-bit CSI etc.), lone surrogates, the Unicode line
# separators Python's splitlines() would split on, and bidi overrides that reorder text.
_CONTROLS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_SURROGATES = re.compile("[\ud800-\udfff]")


def _escaped(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """Control characters shown as ``\\xNN`` (``\\uNNNN`` for bidi and line separators), so
    nothing reaches the terminal raw."""
    return _CONTROLS.sub(_escaped, text)


def terminal_safe(text: str, *, visible: bool = True) -> str:
    """Any untrusted text (a remote's stderr, a launch_error file, process names, log lines)
    before it is printed or drawn, line by line so newlines stay: the one gate for bytes that
    did not come from us. ``visible`` (the command line): escapes and control characters are
    shown as ``\\xNN`` (``printable``); otherwise (the app) they are dropped (``clean_line``)."""
    fix = printable if visible else clean_line
    return "\n".join(fix(line) for line in text.split("\n"))


def strip_escapes(text: str) -> str:
    """Drop terminal escape sequences (colours, OSC titles), then show what is left printable."""
    return printable(_ESCAPES.sub("", text))


def last_cr_segment(line: str) -> str:
    """A ``\\r`` progress bar redraws in place: keep what the terminal would finally show."""
    stripped = line.rstrip("\r")
    cut = stripped.rfind("\r")
    return stripped if cut < 0 else stripped[cut + 1 :]


def clean_line(line: str, max_chars: int = MAX_LINE_CHARS) -> str:
    """One log line, safe to display: no escapes, no controls, bounded length."""
    if "\r" in line:
        line = last_cr_segment(line)
    extra = len(line) - max_chars
    if extra > 0:  # cut first so the regexes below never scan megabytes
        line = line[:max_chars]
    if not line.isprintable():  # fast path: most lines are plain
        if "\x1b" in line:
            line = _ESCAPES.sub("", line)
        if "\t" in line:
            line = line.expandtabs(4)
        line = _CONTROLS.sub("", line)
        line = _SURROGATES.sub("\ufffd", line)
    if extra > 0:
        line += f" … [{extra:,} more characters not shown]"
    return line


def safe_label(text: str | None, max_chars: int = 200) -> str:
    """Short untrusted strings (commands, GPU names, paths) for labels and titles."""
    line = clean_line((text or "")[: max_chars * 4 + 64], max_chars * 4)
    return line if len(line) <= max_chars else line[: max_chars - 1] + "…"


def names_host(label: str, text: str) -> bool:
    """Whether ``text`` already says which host (``local: ...``, ``ssh gpu-a: ...``,
    ``... failed on local (exit 1)``)."""
    return re.search(rf"(?:^|\s){re.escape(label)}(?=:|\s\(|$)", text) is not None


def with_host(label: str, text: str) -> str:
    """``label: text``, or ``text`` alone when it names the host already: said once."""
    return text if names_host(label, text) else f"{label}: {text}"


def si(value: float | None, digits: int = 1) -> str:
    """2810 -> '2.8K'; None -> '-'."""
    if value is None:
        return "-"
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= div:
            return f"{value / div:.{digits}f}{suffix}"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.{digits + 1}f}"


def mib(value: float | None) -> str:
    """The one rule for memory wherever it is shown: below 1 GiB in whole MiB (``500 MiB``),
    from 1 GiB on in GiB with one decimal (``68.4 GiB``); unknown: ``?``."""
    if value is None:
        return "?"
    return f"{value / 1024:.1f} GiB" if value >= 1024 else f"{value:.0f} MiB"


def size(n: float | None) -> str:
    """Bytes as ``mib`` shows memory, with KiB below 1 MiB (a small disk, a small file)."""
    if n is None:
        return "?"
    return f"{n / 1024:.0f} KiB" if n < 1 << 20 else mib(n / (1 << 20))


def mib_pair(used: float | None, total: float | None) -> str:
    """``used/total`` in the total's unit, said once: ``0.0/140.4 GiB``, ``300/512 MiB``
    (never ``0M/140G``). Unknown parts are ``?``."""
    unit = mib(total if total is not None else used)
    if unit == "?":
        return "?/?"
    in_gib = unit.endswith("GiB")

    def num(v: float | None) -> str:
        if v is None:
            return "?"
        return f"{v / 1024:.1f}" if in_gib else f"{v:.0f}"

    return f"{num(used)}/{num(total)} {'GiB' if in_gib else 'MiB'}"
