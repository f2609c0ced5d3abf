"""Cron jobs as Hermes keeps them: validating a request, building and changing a job record.

The records are Hermes's own (same keys, same order, same values), written to
`HERMES_HOME/cron/jobs.json`, so a real Hermes gateway's ticker would run them. Nothing
here runs a job: without a ticker `run` only makes a job due now.

Hermes answers requests its code cannot handle (a number where text belongs, a body
that is an array, a schedule it cannot parse) with the text of the Python exception it
hit. These rules reproduce each such text by performing the same operation on the same
value, and report it as `JobInputError`; `JobError` carries the answers Hermes gives on
purpose.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from hermes_server.domain import job_guard, schedules

JOB_ID = re.compile(r"[a-f0-9]{12}")
MAX_NAME = 200
MAX_PROMPT = 5000
# The only fields PATCH may change.
UPDATABLE = ("name", "schedule", "prompt", "deliver", "skills", "skill", "repeat", "enabled")


class JobError(Exception):
    """An answer the jobs API gives by design: a status and its bare `{"error": …}` text."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class JobInputError(Exception):
    """Input 0.19.0 fails on with a Python exception; the message is that exception's text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class JobsFileError(Exception):
    """The jobs file exists but cannot be read as Hermes's format (the text says why)."""


def not_found() -> JobError:
    return JobError(404, "Job not found")


def check_job_id(job_id: str) -> None:
    """Path ids are twelve lower-case hex digits (checked before the job is looked up)."""
    if not JOB_ID.fullmatch(job_id):
        raise JobError(400, "Invalid job ID format")


def guarded(operation: Callable[[], Any]) -> Any:
    """Run one of the rules below, turning the exception Hermes would hit into its text."""
    try:
        return operation()
    except (TypeError, AttributeError, ValueError, LookupError, RecursionError) as exc:
        raise JobInputError(str(exc)) from None


def skill_list(skill: Any = None, skills: Any = None) -> list[str]:
    """Unique, stripped, non-empty skill names in order (`skills` wins over the legacy `skill`)."""
    if skills is None:
        items = [skill] if skill else []
    elif isinstance(skills, str):
        items = [skills]
    else:
        items = list(skills)
    names: list[str] = []
    for item in items:
        text = str(item or "").strip()
        if text and text not in names:
            names.append(text)
    return names


def _with_skills(job: dict[str, Any]) -> dict[str, Any]:
    aligned = dict(job)
    names = skill_list(aligned.get("skill"), aligned.get("skills"))
    aligned["skills"] = names
    aligned["skill"] = names[0] if names else None
    return aligned


def _text(value: Any, fallback: str = "") -> str:
    return fallback if value is None else str(value)


def readable(job: dict[str, Any]) -> dict[str, Any]:
    """A stored record as the API shows it: skills aligned, text fields never null."""
    shown = _with_skills(job)
    job_id = _text(shown.get("id"), "unknown")
    prompt = _text(shown.get("prompt"))
    shown["id"] = job_id
    shown["prompt"] = prompt
    name = _text(shown.get("name")).strip()
    if not name:
        label = prompt or (shown["skills"][0] if shown["skills"] else "") or _text(shown.get("script")).strip()
        name = (label or job_id or "cron job")[:50].strip() or "cron job"
    shown["name"] = name
    shown["schedule_display"] = _display(shown)
    state = _text(shown.get("state")).strip()
    shown["state"] = state or ("scheduled" if shown.get("enabled", True) else "paused")
    return shown


def _display(job: dict[str, Any]) -> str:
    display = _text(job.get("schedule_display")).strip()
    if display:
        return display
    schedule = job.get("schedule")
    if isinstance(schedule, dict):
        for key in ("display", "value", "expr", "run_at"):
            text = _text(schedule.get(key)).strip()
            if text:
                return text
    elif schedule is not None:
        return str(schedule)
    return "?"


def _check_lengths(fields: dict[str, Any]) -> None:
    if "name" in fields and len(fields["name"]) > MAX_NAME:
        raise JobError(400, f"Name must be \u2264 {MAX_NAME} characters")
    if "prompt" in fields and len(fields["prompt"]) > MAX_PROMPT:
        raise JobError(400, f"Prompt must be \u2264 {MAX_PROMPT} characters")
    if fields.get("prompt"):
        refusal = job_guard.scan_prompt(fields["prompt"])
        if refusal:
            raise JobError(400, refusal)


def _stripped(body: dict[str, Any], key: str) -> str:
    return (body.get(key) or "").strip()


def new_job(body: Any, job_id: str, now: datetime, origin: dict[str, str],
            snapshots: tuple[str | None, str | None] = (None, None)) -> dict[str, Any]:
    """The record POST /api/jobs stores for `body`, checked in Hermes's order; `snapshots` are the
    (provider, model) the home's configuration picks now (domain/job_snapshots.py)."""
    name = _stripped(body, "name")
    schedule_text = _stripped(body, "schedule")
    prompt = body.get("prompt", "")
    deliver = body.get("deliver", "local")
    skills = body.get("skills")
    repeat = body.get("repeat")
    if not name:
        raise JobError(400, "Name is required")
    if len(name) > MAX_NAME:
        raise JobError(400, f"Name must be \u2264 {MAX_NAME} characters")
    if not schedule_text:
        raise JobError(400, "Schedule is required")
    _check_lengths({"prompt": prompt})
    if repeat is not None and (not isinstance(repeat, int) or repeat < 1):
        raise JobError(400, "Repeat must be a positive integer")

    schedule = schedules.parse_schedule(schedule_text, now)
    if schedule["kind"] == "once" and repeat is None:
        repeat = 1
    if deliver is None:
        deliver = "origin"
    names = skill_list(None, skills if skills else None)
    prompt_text = _text(prompt)
    if job_guard.has_lifecycle_command(prompt_text):
        raise ValueError(job_guard.LIFECYCLE_BLOCKED)
    next_run_at = schedules.next_run(schedule, now)
    if schedule["kind"] == "once" and next_run_at is None:
        raise ValueError(_past_oneshot(schedule.get("run_at") or schedule_text))
    return {
        "id": job_id, "name": name, "prompt": prompt_text, "skills": names, "skill": names[0] if names else None,
        "model": None, "provider": None, "provider_snapshot": snapshots[0], "model_snapshot": snapshots[1],
        "base_url": None, "script": None, "no_agent": False, "context_from": None,
        "schedule": schedule, "schedule_display": schedule.get("display", schedule_text),
        "repeat": {"times": repeat, "completed": 0},
        "enabled": True, "state": "scheduled", "paused_at": None, "paused_reason": None,
        "created_at": now.isoformat(), "next_run_at": next_run_at,
        "last_run_at": None, "last_status": None, "last_error": None, "last_delivery_error": None,
        "deliver": deliver, "origin": origin, "enabled_toolsets": None, "workdir": None,
    }


def _past_oneshot(run_at: Any) -> str:
    return (f"Requested one-shot time {run_at} is more than {schedules.ONESHOT_GRACE_SECONDS}s "
            "in the past and cannot be scheduled.")


def patch_fields(body: Any) -> dict[str, Any]:
    """The fields of a PATCH body Hermes keeps, checked before the job is looked up."""
    fields = {key: value for key, value in body.items() if key in UPDATABLE}
    if not fields:
        raise JobError(400, "No valid fields to update")
    _check_lengths(fields)
    return fields


def updated(job: dict[str, Any], updates: dict[str, Any], now: datetime) -> dict[str, Any]:
    """`job` with `updates` applied as given (values are not re-validated), derived fields refreshed."""
    result = _with_skills({**job, **updates})
    if "schedule" in updates:
        schedule = result["schedule"]
        if isinstance(schedule, str):
            schedule = schedules.parse_schedule(schedule, now)
            result["schedule"] = schedule
        result["schedule_display"] = schedule.get("display", result.get("schedule_display"))
        if result.get("state") != "paused":
            next_run_at = schedules.next_run(schedule, now)
            if next_run_at is None and schedule.get("kind") == "once":
                raise ValueError(_past_oneshot(schedule.get("run_at") or schedule))
            result["next_run_at"] = next_run_at
    if result.get("enabled", True) and result.get("state") != "paused" and not result.get("next_run_at"):
        next_run_at = schedules.next_run(result["schedule"], now)
        if next_run_at is None and result["schedule"].get("kind") == "once":
            raise ValueError(
                f"Requested one-shot time {result['schedule'].get('run_at', 'unknown')} is in the past "
                f"(grace window: {schedules.ONESHOT_GRACE_SECONDS}s) and cannot be scheduled.")
        result["next_run_at"] = next_run_at
    return result


def find_ref(jobs: list[dict[str, Any]], ref: str) -> dict[str, Any] | None:
    """The job a pause/resume/run/delete path names: its exact id, else its name, any case."""
    for job in jobs:
        if job["id"] == ref:
            return job
    matches = [job for job in jobs if _text(job.get("name")).lower() == ref.lower()]
    if len(matches) > 1:
        ids = ", ".join(_text(job.get("id")) for job in matches)
        raise ValueError(f"Job name '{ref}' is ambiguous \u2014 matches {len(matches)} jobs: {ids}. "
                          "Use the job ID instead.")
    return matches[0] if matches else None


def paused(now: datetime) -> dict[str, Any]:
    return {"enabled": False, "state": "paused", "paused_at": now.isoformat(), "paused_reason": None}


def resumed(job: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The fields resuming sets; a one-shot whose time has passed cannot resume."""
    schedule = readable(job)["schedule"]
    next_run_at = schedules.next_run(schedule, now)
    if next_run_at is None and schedule.get("kind") == "once":
        raise ValueError(
            f"Cannot resume: one-shot time {schedule.get('run_at', 'unknown')} is in the past "
            f"(grace window: {schedules.ONESHOT_GRACE_SECONDS}s) and will never fire.")
    return {"enabled": True, "state": "scheduled", "paused_at": None, "paused_reason": None,
            "next_run_at": next_run_at}


def triggered(now: datetime) -> dict[str, Any]:
    """Run now: the job becomes due at once (a gateway ticker would pick it up)."""
    return {"enabled": True, "state": "scheduled", "paused_at": None, "paused_reason": None,
            "next_run_at": now.isoformat()}


def listed(jobs: list[dict[str, Any]], include_disabled: bool,
           latest: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """GET /api/jobs: readable records, disabled ones hidden unless asked for, each with its
    latest execution (null unless a Hermes ticker ran it)."""
    shown = [readable(job) for job in jobs]
    if not include_disabled:
        shown = [job for job in shown if job.get("enabled", True)]
    return [{**job, "latest_execution": latest.get(job["id"])} for job in shown]


def origin(peer: str, forwarded_for: str, real_ip: str, user_agent: str) -> dict[str, str]:
    """Where a job was created from, each value cleaned of line breaks and cut short."""
    def clean(value: str, limit: int = 200) -> str:
        return value.replace("\r", " ").replace("\n", " ").strip()[:limit]

    result = {"platform": "api_server", "chat_id": "api"}
    for key, value in (("source_ip", clean(peer)), ("peer_ip", clean(peer)),
                       ("forwarded_for", clean(forwarded_for)), ("real_ip", clean(real_ip)),
                       ("user_agent", clean(user_agent, 300))):
        if value:
            result[key] = value
    return result
