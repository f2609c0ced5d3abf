"""OpenAPI components of the cron jobs API (routes/jobs.py)."""

from __future__ import annotations

from typing import Any

from hermes_server.openapi.build import Components, json_answer, json_object, query_parameter, schema_ref, with_example
from hermes_server.openapi.common import text, text_or_null

# Error answers of the jobs routes, to merge into `Operation.responses`.
JOB_ERRORS = {401: "Unauthorized", 413: "PayloadTooLarge", 500: "JobServerError"}
JOB_ID_ERRORS = {**JOB_ERRORS, 400: "JobError", 404: "JobError"}

_NULLABLE_TEXT = {"type": ["string", "null"]}
_JOB_PROPERTIES: dict[str, Any] = {
    "id": {"type": "string", "pattern": "^[a-f0-9]{12}$"},
    "name": {}, "prompt": {"type": "string"},
    "skills": {"type": "array", "items": {"type": "string"}}, "skill": _NULLABLE_TEXT,
    "model": _NULLABLE_TEXT, "provider": _NULLABLE_TEXT, "provider_snapshot": _NULLABLE_TEXT,
    "model_snapshot": _NULLABLE_TEXT, "base_url": _NULLABLE_TEXT, "script": _NULLABLE_TEXT,
    "no_agent": {"type": "boolean"}, "context_from": {},
    "schedule": {"description": "`{kind: interval|cron|once, …, display}` as Hermes stores it; a PATCH "
                                "may store another value as given."},
    "schedule_display": {"type": "string"},
    "repeat": {"description": "`{times, completed}`; a PATCH stores the value as given."},
    "enabled": {"description": "true/false; a PATCH stores the value as given."},
    "state": {"type": "string"}, "paused_at": _NULLABLE_TEXT, "paused_reason": {},
    "created_at": {"type": "string"}, "next_run_at": _NULLABLE_TEXT, "last_run_at": _NULLABLE_TEXT,
    "last_status": _NULLABLE_TEXT, "last_error": _NULLABLE_TEXT, "last_delivery_error": _NULLABLE_TEXT,
    "deliver": {}, "origin": {}, "enabled_toolsets": {}, "workdir": {},
}

# What a create takes (and a PATCH may change), checked as Hermes checks a create, in its order.
_JOB_FIELDS: dict[str, Any] = {
    "name": text("Required, at most 200 characters once trimmed.", minLength=1, maxLength=200),
    "schedule": text("Required: `every 30m`, a 5-field cron expression, an ISO time, or a duration such as `30m` (a "
                     "one-shot); else 400 naming what it could not read.", minLength=1),
    "prompt": text("What the job asks the agent (at most 5,000 characters). A prompt that runs a lifecycle command "
                   "of the gateway is refused.", maxLength=5000),
    "deliver": text_or_null("Where the output goes: `local` (default), `origin` (null means it too), or a "
                            "platform target."),
    "skills": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}, {"type": "null"}],
               "description": "Skills the job loads: names, or one name."},
    "repeat": {"type": ["integer", "null"], "minimum": 1, "description": "How many runs; null: forever (a one-shot "
                                                                         "schedule: 1). Else 400."},
}

# What creating a job does beyond its fields and answers.
CREATE_JOB = """\
Stores a cron job in HERMES_HOME/cron/jobs.json, where a Hermes gateway on the same home runs it \
(hermes-server runs none). Answers 200, not 201, as upstream."""

COMPONENTS: Components = {
    "schemas": {
        "Job": {"type": "object", "properties": _JOB_PROPERTIES, "required": ["id", "name", "schedule"]},
        "JobEnvelope": {"type": "object", "properties": {"job": schema_ref("Job")}, "required": ["job"]},
        "JobListEnvelope": {"type": "object", "required": ["jobs"], "properties": {"jobs": {"type": "array", "items": {
            "allOf": [schema_ref("Job"), {"type": "object", "properties": {"latest_execution": {}}}]}}}},
        "JobDeletedEnvelope": {"type": "object", "properties": {"ok": {"const": True}}, "required": ["ok"]},
        "JobCreate": with_example({"name": "Daily digest", "schedule": "every 1d", "prompt": "Summarise the day."},
                                  json_object(_JOB_FIELDS, ["name", "schedule"], closed=False)),
        "JobUpdate": with_example({"enabled": False}, {
            **json_object({**_JOB_FIELDS, "skill": text_or_null("The legacy single skill (`skills` wins)."),
                           "enabled": {"type": "boolean", "description": "false: the job is not run."}}, closed=False),
            "minProperties": 1,
            "description": "Any of the fields below; others are ignored, and a body with none of them is 400 `No valid "
                           "fields to update`. The values are stored as given: a PATCH does not check them as a "
                           "create does (a schedule is stored as sent), as upstream.",
        }),
    },
    "responses": {
        "Job": json_answer("The job as stored (create answers 200, as upstream).", "JobEnvelope"),
        "JobList": json_answer("The jobs, in creation order.", "JobListEnvelope"),
        "JobDeleted": json_answer("The job and its output are gone.", "JobDeletedEnvelope"),
        "JobError": json_answer("A bare `{\"error\": text}`: invalid input or job id (400), no such job (404).",
                                "BareError"),
        "JobServerError": json_answer("The jobs file cannot be read (with `--upstream-quirks`, also malformed "
                                      "input).", "BareError"),
    },
    "parameters": {
        "job_id": {"name": "job_id", "in": "path", "required": True,
                   "description": "Twelve lower-case hex digits (else 400). pause/resume/run/DELETE also accept a "
                                  "job name here when it has that form, as upstream.",
                   "schema": {"type": "string"}},
        "include_disabled": query_parameter("include_disabled", "true or 1 (any case): also list disabled jobs."),
    },
}
