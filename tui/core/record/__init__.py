"""The flight recorder: every probe sample, the diagnosis' labels and findings, the timeline's
events and the new log lines of a run, appended to ``<run_dir>/record/`` as compressed
append-only segments, and read back (for ``dflash-tui replay`` and ``status --replay``).

- codec.py     a Snapshot to a record line and back (the process table as row deltas)
- segments.py  one segment file: a gzip stream flushed after every record; torn-tolerant reads
- recorder.py  the writer: where a run's record goes, rotation, the size cap (thinning)
- thread.py    one thread doing many hosts' recorders' work off the app's event loop
- thin.py      keep 1 sample in N of an old segment, its log lines and events kept
- replay.py    a recording read back: the state, status document and events at a time

It uses base and diagnosis; never Textual, Rich, link or control (docs/record.md).
"""
