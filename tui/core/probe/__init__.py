"""What runs on the GPU host, with nothing installed there.

``main`` (with its parts ``gpu`` and ``files``) is one stdlib-only program for python3 >= 3.8,
sent over stdin as ``python3 - ARGS`` and printing one JSON line per sample
(docs/internals.md). ``shell.sh`` is the degraded probe for hosts without python3 (POSIX sh +
awk). ``loader`` picks between them on the host; ``bundle`` joins the parts into the program
that travels. Written by hand because it must run where nothing of ours is installed.

These modules import nothing of the supervisor, nor asyncssh, Rich or Textual (an import
contract checks it). Other layers use ``bundle.probe_source`` and ``loader.launcher``.
"""
