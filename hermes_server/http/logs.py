"""Logging: one setup for the process, the access line, and the single error report.

Operators read these lines, and they end up in CI artefacts and shared dashboards, so
they carry only what identifies a request: method, route template, status, duration,
the path's session id and a request id. Never bodies, titles, prompts, transcript
text, tokens or keys; an unknown path is logged as "-" because its raw text could be
anything a client sent.
"""

from __future__ import annotations

import json
import logging
import random
import re
import sys
import time
from typing import Any

from hermes_server.domain.redact import redact

LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("text", "json")

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

access_log = logging.getLogger("hermes_server.access")
error_log = logging.getLogger("hermes_server.errors")

# The access line's status for a request whose client left before it could be answered
# (nginx's "client closed request"); no such status is ever sent.
CLIENT_LEFT = 499

# Longest session id a log line shows; the rest is cut (ids may be up to 256 characters).
_MAX_ID_CHARS = 80
_SPACE = re.compile(r"\s")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, then the record's fields."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
                    + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        payload.update(getattr(record, "fields", {}))
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return json.dumps(payload, ensure_ascii=False)


class ShutdownCutIsNotAnError(logging.Filter):
    """uvicorn logs the end of its graceful-shutdown timeout at ERROR; here it is the documented
    end of the grace period (streams closed cleanly, turns still stored), so a warning."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.ERROR and "timeout graceful shutdown exceeded" in str(record.msg):
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.msg = "shutdown grace period over: ending %d request(s) still running"
        return True


# uvicorn logs everything it says (start-up, shutdown, bad requests) under `uvicorn.error`, so even
# "Application startup complete." reads as an error to a CI job that greps its logs for "error";
# those lines go out under this name instead, each at the level uvicorn gave it.
SERVER_LOGGER = "hermes_server.server"


class UnderOurName(logging.Filter):
    """uvicorn's lines under the server's own logger name."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.name = SERVER_LOGGER
        return True


def configure_logging(level: str = "info", fmt: str = "text") -> None:
    """Send every logger (uvicorn's included, under our name) to stderr in the chosen format."""
    uvicorn_errors = logging.getLogger("uvicorn.error")
    for kind in (ShutdownCutIsNotAnError, UnderOurName):
        if not any(isinstance(f, kind) for f in uvicorn_errors.filters):
            uvicorn_errors.addFilter(kind())
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Neither format shows a thread, process or source line: skip collecting them for each
    # record (the logging HOWTO's "Optimization" switches); the access line is per request.
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logging._srcfile = None  # noqa: SLF001 - the documented way to skip the caller lookup per record


def new_request_id() -> str:
    """A short random id that ties an access line to an error report.

    From the process's seeded PRNG, not uuid4: one request id per request made
    os.urandom a measurable part (2%) of a request's CPU, and these ids are not secrets.
    """
    return f"{random.getrandbits(64):016x}"


def safe_id(value: str | None) -> str:
    """A session id fit for one log line: credentials masked, controls escaped, length capped."""
    if not value:
        return "-"
    text = redact(value)
    if len(text) > _MAX_ID_CHARS:
        text = text[:_MAX_ID_CHARS] + "…"
    if text.isprintable() and not _SPACE.search(text):
        return text  # the usual id: nothing to escape
    return "".join(_escape(ch) for ch in text)


def _escape(ch: str) -> str:
    """Keep printable non-space characters; write the rest as Python escapes (no log injection)."""
    if ch.isprintable() and not ch.isspace():
        return ch
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def log_access(method: str, route: str | None, status: int, seconds: float,
               session_id: str | None, request_id: str) -> None:
    """The one line every request leaves, whatever its outcome."""
    fields = {
        "method": method,
        "route": route or "-",
        "status": status,
        "duration_ms": round(seconds * 1000, 1),
        "session_id": safe_id(session_id),
        "request_id": request_id,
    }
    access_log.info("%s %s %s %.1fms session=%s request=%s", fields["method"], fields["route"], status,
                    fields["duration_ms"], fields["session_id"], request_id, extra={"fields": fields})


def log_failure(exc: BaseException, method: str, route: str | None, request_id: str) -> None:
    """Report an unexpected exception once, with the id its access line also carries."""
    error_log.error("unhandled error in %s %s (request %s)", method, route or "-", request_id,
                    exc_info=(type(exc), exc, exc.__traceback__),
                    extra={"fields": {"method": method, "route": route or "-", "request_id": request_id}})


def say(message: str, fmt: str, *, level: str = "info", stream: Any = None) -> None:
    """A start-up or refusal line of the CLI, in the log format chosen (text keeps its `hermes-server:` form)."""
    if fmt == "json":
        record = logging.makeLogRecord({"name": "hermes_server.cli", "levelname": level.upper(),
                                        "levelno": getattr(logging, level.upper()), "msg": message})
        line = JsonFormatter().format(record)
    else:
        line = f"hermes-server: {'WARNING: ' if level == 'warning' else ''}{message}"
    print(line, file=stream or sys.stdout, flush=True)
