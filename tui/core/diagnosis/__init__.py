"""The diagnosis: pure rules from recent samples to what is wrong. No I/O, no clock of its own.

- ``diagnose``: samples + topology + thresholds -> ``Diagnosis`` (labels per GPU, run state,
  findings); ``ownership``: who a GPU process belongs to; ``thresholds``: the named settings.
- ``findings_gpu`` and ``findings_run``: the findings' texts (what, why, what next);
  ``finding``: the ``Finding`` record; ``severity``: the one home for severities and their
  order, a label's, a run state's and an owner's severity.
- ``progress``: step/loss/acc/tok/s parsed from log lines; ``tracker``: one host's recent
  samples and progress; ``timeline``: the event fold (launched, compiled, crashed, ...);
  ``document``: the status JSON (schema 1).

Uses ``base`` only; never ``link`` or ``control``. The app and the command line read these.
"""
