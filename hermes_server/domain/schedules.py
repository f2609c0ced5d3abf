"""Cron-job schedules as Hermes writes them into `cron/jobs.json`: parsing and the next run.

Four forms are understood, tried in this order, and stored as Hermes stores them so a
real Hermes ticker reads the same file: `every <n><unit>` (an interval in minutes), five
or more cron fields of digits and `* - , /`, an ISO timestamp (a one-shot), and a bare
duration (a one-shot that long from now). Every error is a `ValueError` whose text is
Hermes's own, since the jobs API hands that text to the client.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

ONESHOT_GRACE_SECONDS = 120

_DURATION = re.compile(r"^(\d+)\s*(m|min|mins|minute|minutes|h|hr|hrs|hour|hours|d|day|days)$")
_UNIT_MINUTES = {"m": 1, "h": 60, "d": 1440}
_CRON_FIELD = re.compile(r"^[\d*\-,/]+$")
_DATE_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}")

_USAGE = (
    "Invalid schedule '{0}'. Use:\n"
    "  - Duration: '30m', '2h', '1d' (one-shot)\n"
    "  - Interval: 'every 30m', 'every 2h' (recurring)\n"
    "  - Cron: '0 9 * * *' (cron expression)\n"
    "  - Timestamp: '2026-02-03T14:00:00' (one-shot at time)"
)


def duration_minutes(text: str) -> int:
    """`30m`, `2 hours`, `1d` → minutes."""
    cleaned = text.strip().lower()
    match = _DURATION.match(cleaned)
    if not match:
        raise ValueError(f"Invalid duration: '{cleaned}'. Use format like '30m', '2h', or '1d'")
    return int(match.group(1)) * _UNIT_MINUTES[match.group(2)[0]]


def parse_schedule(text: str, now: datetime) -> dict[str, Any]:
    """The stored schedule object for `text`; `now` is aware, in the configured zone."""
    schedule = text.strip()
    if schedule.lower().startswith("every "):
        minutes = duration_minutes(schedule[6:].strip())
        return {"kind": "interval", "minutes": minutes, "display": f"every {minutes}m"}
    parts = schedule.split()
    if len(parts) >= 5 and all(_CRON_FIELD.match(part) for part in parts[:5]):
        try:
            CronExpression(schedule)
        except ValueError as exc:
            raise ValueError(f"Invalid cron expression '{schedule}': {exc}") from None
        return {"kind": "cron", "expr": schedule, "display": schedule}
    if "T" in schedule or _DATE_PREFIX.match(schedule):
        try:
            moment = datetime.fromisoformat(schedule.replace("Z", "+00:00"))
        except ValueError as exc:
            raise ValueError(f"Invalid timestamp '{schedule}': {exc}") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=now.tzinfo)
        return {"kind": "once", "run_at": moment.isoformat(),
                "display": f"once at {moment.strftime('%Y-%m-%d %H:%M')}"}
    try:
        minutes = duration_minutes(schedule)
    except ValueError:
        raise ValueError(_USAGE.format(schedule)) from None
    return {"kind": "once", "run_at": (now + timedelta(minutes=minutes)).isoformat(),
            "display": f"once in {schedule}"}


def _aware(moment: datetime, now: datetime) -> datetime:
    """A stored timestamp in the configured zone (a naive one is read as this machine's local time)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.now().astimezone().tzinfo)
    return moment.astimezone(now.tzinfo)


def next_run(schedule: Any, now: datetime) -> str | None:
    """When a job with `schedule`, never run yet, fires next; None when it never will."""
    if not isinstance(schedule, dict):
        return None
    kind = schedule.get("kind")
    if kind == "once":
        run_at = schedule.get("run_at")
        if not run_at:
            return None
        try:
            moment = _aware(datetime.fromisoformat(run_at), now)
        except Exception:  # noqa: BLE001 - an unreadable hand-edited value means "never", as Hermes reads it
            return None
        return run_at if moment >= now - timedelta(seconds=ONESHOT_GRACE_SECONDS) else None
    if kind == "interval":
        minutes = schedule.get("minutes")
        return None if minutes is None else (now + timedelta(minutes=minutes)).isoformat()
    if kind == "cron":
        expr = schedule.get("expr")
        return CronExpression(expr).next_after(now).isoformat() if expr else None
    return None


# Field ranges of a cron expression: minute, hour, day of month, month, day of week,
# then the optional seconds and year columns.
_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7), (0, 59), (1970, 2099))


class CronExpression:
    """Cron as Hermes's croniter reads it: five columns (a sixth for seconds, a seventh for
    the year), `*`, lists, ranges that may wrap, steps; day of month and day of week
    restricted together match either. Error texts are croniter's."""

    def __init__(self, expr: str) -> None:
        columns = expr.split()
        if len(columns) not in (5, 6, 7):
            raise ValueError("Exactly 5, 6 or 7 columns has to be specified for iterator expression.")
        self.fields: list[set[int]] = []
        self.restricted: list[bool] = []
        for column, (low, high) in zip(columns, _RANGES, strict=False):  # the optional columns may be absent
            self.fields.append(self._field(column, low, high, expr))
            self.restricted.append(column != "*")
        if 7 in self.fields[4]:
            self.fields[4] = (self.fields[4] - {7}) | {0}
        # A sixth column is the second, a seventh the year; without them: second 0, any year.
        self.seconds = sorted(self.fields[5]) if len(self.fields) > 5 else [0]
        self.years = self.fields[6] if len(self.fields) > 6 else None

    @staticmethod
    def _field(column: str, low: int, high: int, expr: str) -> set[int]:
        """One column's values. A range may wrap (`50-10`: 50…59 then 0…10), as croniter reads it."""
        values: set[int] = set()
        wrap_high = 6 if high == 7 else high  # day of week: 7 is Sunday, which is 0
        for item in column.split(","):
            span, _, step_text = item.partition("/")
            try:
                step = int(step_text) if step_text else 1
                if span == "*":
                    start, end = low, high
                elif "-" in span:
                    first, _, last = span.partition("-")
                    start, end = int(first), int(last)
                else:
                    start = int(span)
                    end = high if step_text else start
            except ValueError:
                raise ValueError(f"[{expr}] is not acceptable") from None
            if not (low <= start <= high and low <= end <= high):
                if span == "*" or ("-" not in span and not step_text):
                    raise ValueError(f"[{expr}] is not acceptable, out of range")
                raise ValueError(f"{expr} is out of bands")
            if step == 0:
                raise ValueError("invalid range: range() arg 3 must not be zero")
            if step < 0:
                raise ValueError(f"[{expr}] is not acceptable")
            sequence = (list(range(start, end + 1)) if start <= end
                        else list(range(start, wrap_high + 1)) + list(range(low, end + 1)))
            values.update(sequence[::step])
        return values

    def _day_matches(self, day: datetime) -> bool:
        in_month = day.day in self.fields[2]
        in_week = (day.isoweekday() % 7) in self.fields[4]
        if self.restricted[2] and self.restricted[4]:
            return in_month or in_week
        return in_month and in_week

    def next_after(self, now: datetime) -> datetime:
        """The first matching time strictly after `now`, to the second, in `now`'s zone."""
        start = now.replace(microsecond=0) + timedelta(seconds=1)
        day = start.replace(hour=0, minute=0, second=0)
        for _ in range(366 * 50):
            if (day.month in self.fields[3] and self._day_matches(day)
                    and (self.years is None or day.year in self.years)):
                for hour in sorted(self.fields[1]):
                    for minute in sorted(self.fields[0]):
                        for second in self.seconds:
                            candidate = day.replace(hour=hour, minute=minute, second=second)
                            if candidate >= start:
                                return candidate
            day += timedelta(days=1)
        raise ValueError("failed to find next date")
