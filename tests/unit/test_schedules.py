"""Cron-job schedules: Hermes's four forms, its error texts, and the next run."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hermes_server.domain.schedules import CronExpression, next_run, parse_schedule

NOW = datetime(2030, 1, 1, 12, 30, 15, 123456, tzinfo=UTC)  # a Tuesday


@pytest.mark.parametrize("text, expected", [
    ("every 2h", {"kind": "interval", "minutes": 120, "display": "every 120m"}),
    ("EVERY 5 minutes", {"kind": "interval", "minutes": 5, "display": "every 5m"}),
    ("*/15 * * * *", {"kind": "cron", "expr": "*/15 * * * *", "display": "*/15 * * * *"}),
    ("2030-02-03T14:00Z", {"kind": "once", "run_at": "2030-02-03T14:00:00+00:00", "display": "once at 2030-02-03 14:00"}),
    ("30m", {"kind": "once", "run_at": "2030-01-01T13:00:15.123456+00:00", "display": "once in 30m"}),
])
def test_forms(text: str, expected: dict) -> None:
    assert parse_schedule(text, NOW) == expected


@pytest.mark.parametrize("text, message", [
    ("every 3 weeks", "Invalid duration: '3 weeks'. Use format like '30m', '2h', or '1d'"),
    ("0 9 * * MON", "Invalid schedule '0 9 * * MON'."),
    ("60 * * * *", "Invalid cron expression '60 * * * *': [60 * * * *] is not acceptable, out of range"),
    ("1 2 3 4 5 6 7 8", "Invalid cron expression '1 2 3 4 5 6 7 8': Exactly 5, 6 or 7 columns"),
    ("0-70 * * * *", "Invalid cron expression '0-70 * * * *': 0-70 * * * * is out of bands"),
    ("*/0 * * * *", "Invalid cron expression '*/0 * * * *': invalid range: range() arg 3 must not be zero"),
    ("2030-13-01", "Invalid timestamp '2030-13-01': month must be in 1..12"),
])
def test_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_schedule(text, NOW)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize("expr, expected", [
    ("*/15 * * * *", "2030-01-01T12:45:00+00:00"),
    ("0 9 * * *", "2030-01-02T09:00:00+00:00"),
    ("30 12 * * *", "2030-01-02T12:30:00+00:00"),  # strictly after now
    ("0 0 1 * 0", "2030-01-06T00:00:00+00:00"),  # day of month OR day of week (Sunday)
    ("0 0 29 2 *", "2032-02-29T00:00:00+00:00"),
    ("0 0 * * 7", "2030-01-06T00:00:00+00:00"),  # 7 is Sunday too
    ("50-10/20 3 * * *", "2030-01-02T03:10:00+00:00"),  # a range wraps: 50, 10
    ("0 0 * * 5-1", "2030-01-04T00:00:00+00:00"),  # Friday to Monday
    ("* * * * * */20", "2030-01-01T12:30:20+00:00"),  # a sixth column holds the seconds
])
def test_next_cron_run(expr: str, expected: str) -> None:
    assert CronExpression(expr).next_after(NOW).isoformat() == expected


def test_one_shot_grace_and_interval() -> None:
    assert next_run({"kind": "once", "run_at": "2030-01-01T12:29:00+00:00"}, NOW) == "2030-01-01T12:29:00+00:00"
    assert next_run({"kind": "once", "run_at": "2030-01-01T12:20:00+00:00"}, NOW) is None
    assert next_run({"kind": "interval", "minutes": 5}, NOW) == "2030-01-01T12:35:15.123456+00:00"
    assert next_run("not a dict", NOW) is None
