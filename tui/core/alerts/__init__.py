"""Alerts: telling a person what the supervisor saw, without being noisy or getting stuck.

- ``alert``: the ``Alert`` record and its shapes: the JSON on a command's stdin, the
  ``DFLASH_ALERT_*`` variables, the webhook body (Slack's ``text``, ntfy's JSON fields).
- ``limit``: ``RateLimiter``, pure: one alert per code per ``min_interval_s``, the ones held
  back summed up in the next (a restart loop sends one alert and a summary), nothing after
  FATAL but the FATAL alert; its state survives a supervisor restart.
- ``notify``: the notifiers (a command, a webhook) under total deadlines, and ``Alerter``, which
  filters, rate-limits and sends them in the background, one lane per notifier, a webhook on
  threads of its own: a failing or hung notifier is logged and never holds up supervision,
  sampling or another notifier.
- ``http_post``: one POST whose connect, send and answer together end by a deadline.

Uses ``base`` only (the ``[alerts]`` settings are ``base.alert_config``); the supervisor in
``control`` and the app use it.
"""
