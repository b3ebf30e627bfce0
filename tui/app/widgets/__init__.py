"""What every widget shares: the draw guard and theme-aware redraws (``themed.py``), the colours
of a theme (``palette.py``, themes from TOML in ``themes.py``), text bars and sparklines
(``spark.py``), a Static drawn row by row (``rows.py``), the wait bar of a long control
action (``waits.py``) and widgets removed without the lines they drew (``removal.py``)."""
