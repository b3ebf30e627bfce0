"""Alerts, pure parts: the rate limit (a restart loop sends one alert and a summary; nothing
after FATAL but FATAL; its state survives a restart) and the shapes an alert travels in."""

from __future__ import annotations

import json

from dflash_tui.core.alerts.alert import Alert
from dflash_tui.core.alerts.limit import RateLimiter


def alert(code: str, t: float, msg: str = "m") -> Alert:
    return Alert(code, "error", msg, "gpu-box", t, "20261202-090000-abcd", ("l1", "l2"))


def test_a_restart_loop_sends_one_alert_then_a_summary() -> None:
    rl = RateLimiter(lambda code: 60.0)
    sent = [rl.offer(alert("restart", t, f"crash {t}"), t) for t in (0, 5, 10, 15)]
    assert [a is not None for a in sent] == [True, False, False, False]
    assert rl.due(30) == []  # the interval has not passed
    (summary,) = rl.due(61)
    assert summary.held == (("restart", 3),) and summary.message.startswith("3 more restart")
    assert "the latest: crash 15" in summary.message and rl.due(200) == []
    again = rl.offer(alert("restart", 200), 200)  # the interval is per code, from the summary
    assert again is not None and again.held == ()


def test_codes_are_limited_apart_and_fatal_closes_with_the_counts() -> None:
    rl = RateLimiter(lambda code: {"restart": 60.0}.get(code, 300.0))
    assert rl.offer(alert("restart", 0), 0) is not None
    assert rl.offer(alert("run-exited", 0), 0) is not None  # another code: its own limit
    assert rl.offer(alert("restart", 1), 1) is None
    assert rl.offer(alert("run-exited", 1), 1) is None
    assert rl.offer(alert("run-exited", 2), 2) is None
    fatal = rl.offer(alert("fatal", 3), 3)
    assert fatal is not None and dict(fatal.held) == {"restart": 1, "run-exited": 2}
    assert rl.offer(alert("restart", 400), 400) is None and rl.due(400) == []  # after FATAL
    assert rl.offer(alert("fatal", 401), 401) is None
    rl.reopen()
    assert rl.offer(alert("restart", 402), 402) is not None


def test_the_state_survives_a_supervisor_restart() -> None:
    rl = RateLimiter(lambda code: 60.0)
    rl.offer(alert("restart", 0), 0)
    rl.offer(alert("restart", 5, "second"), 5)
    saved = json.loads(json.dumps(rl.to_json()))
    back = RateLimiter(lambda code: 60.0)
    back.restore(saved)
    assert back.offer(alert("restart", 10, "third"), 10) is None  # still limited
    (summary,) = back.due(70)
    assert summary.held == (("restart", 2),) and summary.message.endswith("the latest: third")
    junk = RateLimiter(lambda code: 60.0)
    junk.restore({"last_sent": {"x": "nope"}, "held": {"y": {"count": "z"}}, "closed": 1})
    assert junk.last_sent == {} and junk.held == {} and not junk.closed


def test_webhook_body_fits_slack_and_ntfy_and_env_is_one_line() -> None:
    a = Alert("fatal", "error", "FATAL: gave up\nafter 3", "gpu-box", 0.0, "r1", ("boom",),
              (("restart", 2),))  # fmt: skip
    body = a.webhook_body(topic="my-run")
    assert "FATAL: gave up" in body["text"] and "boom" in body["text"]  # Slack reads "text"
    assert body["topic"] == "my-run" and body["title"] == "dflash fatal on gpu-box (run r1)"
    assert body["priority"] == 5 and isinstance(body["tags"], list)  # ntfy's JSON fields
    assert body["alert"]["held"] == {"restart": 2} and body["alert"]["log_tail"] == ["boom"]
    assert "topic" not in a.webhook_body()
    env = a.env()
    assert env["DFLASH_ALERT_CODE"] == "fatal" and env["DFLASH_ALERT_RUN"] == "r1"
    assert all("\n" not in v for v in env.values())
    assert Alert.from_json(a.to_json()) == a


def test_an_answer_whose_status_is_not_ascii_digits_is_not_http() -> None:
    # latin-1 b"\xb2" is "²", which str.isdigit() calls a digit and int() refuses.
    import pytest

    from dflash_tui.core.alerts.http_post import PostError, _status

    assert _status(b"HTTP/1.1 204 No Content\r\nX: y") == (204, "No Content")
    for head in (b"HTTP/1.1 \xb2 OK", b"HTTP/1.1", b"SMTP 220 hi"):
        with pytest.raises(PostError):
            _status(head)


def test_the_receivers_reason_phrase_is_made_terminal_safe_and_short() -> None:
    from dflash_tui.core.alerts.http_post import _status

    code, reason = _status(b"HTTP/1.1 500 \x1b[2Jgone\x07" + b"x" * 500)
    assert code == 500 and "\x1b" not in reason and "\x07" not in reason
    assert reason.startswith("gone") and len(reason) <= 100
