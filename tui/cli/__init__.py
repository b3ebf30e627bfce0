"""The command line: ``dflash-tui`` and its subcommands (DESIGN.md's contract).

``main`` parses the flags and dispatches; ``status`` and ``run`` (launch | kill | restart) are
the front ends for scripts; ``table`` is status' readable Rich table. Textual is imported only
when the app starts (``dflash_tui.app.main``).
"""
