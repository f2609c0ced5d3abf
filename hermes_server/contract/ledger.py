"""What `verify` created on the server it checks, read from that server's own answers, and removing it.

Only what an answer of ours says we created is ever removed: a session a create, a fork, a
turn or a run named (its id, or the `X-Hermes-Session-Id` the answer carried), a cron job a
create returned, a response a Responses turn returned. Everything `verify` names itself starts
with its run's prefix; what the server names (a generated session id, a run or response id) is
known from the answer that created it. A run still going is waited for (and stopped) before its
session is deleted, since a finishing turn writes its session again.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote

from hermes_server.contract.play import LIVE_STATUSES
from hermes_server.contract.steps import Step
from hermes_server.contract.wire import Answer

_RESPONSE_ID = re.compile(rb"resp_[0-9a-f]{28}")
# A run still live at the end is waited for this long, then stopped.
RUN_SETTLE_SECONDS = 30.0


@dataclass
class Ledger:
    """Ids created on one server, in the order they were created; `prefix` is the run's."""

    prefix: str
    sessions: list[str] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)
    responses: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)

    def observe(self, step: Step, path: str, answer: Answer) -> None:
        """Record what a 2xx answer to `step` says was created, and the session a create or fork
        named with the run's prefix whatever it answered (0.19.0's fork writes its child before it
        refuses a title, and leaves it there)."""
        route = path.split("?")[0]
        creates = step.method == "POST" and (route == "/api/sessions" or route.endswith("/fork"))
        if creates and isinstance(step.body, dict):
            for key in ("id", "session_id"):
                named = step.body.get(key)
                if isinstance(named, str) and named.strip().startswith(self.prefix):
                    _add(self.sessions, named.strip())
        if not 200 <= answer.status < 300:
            return
        data = answer.json_object()
        if creates:
            _add(self.sessions, (data.get("session") or {}).get("id"))
        if step.method == "POST" and route == "/api/jobs":
            _add(self.jobs, (data.get("job") or {}).get("id"))
        if step.method == "POST" and route == "/v1/runs":
            _add(self.runs, data.get("run_id"))
            asked = step.body.get("session_id") if isinstance(step.body, dict) else None
            _add(self.sessions, asked if isinstance(asked, str) and asked.strip() else data.get("run_id"))
        if step.method == "POST" and route == "/v1/responses":
            for found in _RESPONSE_ID.findall(answer.body):
                _add(self.responses, found.decode())
        _add(self.sessions, answer.headers.get("x-hermes-session-id"))

    def __len__(self) -> int:
        return len(self.sessions) + len(self.jobs) + len(self.responses) + len(self.runs)

    def counts(self) -> dict[str, int]:
        return {"sessions": len(self.sessions), "jobs": len(self.jobs), "responses": len(self.responses),
                "runs": len(self.runs)}

    def clean(self, send: Callable[[str, str], Answer]) -> list[str]:
        """Remove everything recorded (newest first; `send(method, path)` asks the server with its
        key); what could not be removed, one line each."""
        left: list[str] = []
        for run_id in self.runs:
            problem = _settle(send, run_id)
            if problem:
                left.append(problem)
        for kind, ids, route in (("response", self.responses, "/v1/responses"), ("cron job", self.jobs, "/api/jobs"),
                                 ("session", self.sessions, "/api/sessions")):
            for item in reversed(ids):
                problem = _remove(send, kind, route, item)
                if problem:
                    left.append(problem)
        return left


def _add(ids: list[str], found: object) -> None:
    if isinstance(found, str) and found and found not in ids:
        ids.append(found)



def _settle(send: Callable[[str, str], Answer], run_id: str) -> str | None:
    """Wait for a run to end (stopping it after RUN_SETTLE_SECONDS); a line when it would not."""
    path = f"/v1/runs/{quote(run_id, safe='')}"
    deadline = time.monotonic() + RUN_SETTLE_SECONDS
    stopped = False
    while True:
        try:
            answer = send("GET", path)
        except OSError as exc:
            return f"run {run_id}: could not read its status ({exc})"
        if answer.status != 200 or answer.json_object().get("status") not in LIVE_STATUSES:
            return None
        if time.monotonic() > deadline:
            if stopped:
                return f"run {run_id}: still {answer.json_object().get('status')} after a stop"
            send("POST", f"{path}/stop")
            stopped, deadline = True, time.monotonic() + 10
        time.sleep(0.2)


def _remove(send: Callable[[str, str], Answer], kind: str, route: str, item: str) -> str | None:
    """DELETE one thing; gone already (404) is fine; a line for anything else."""
    try:
        path = f"{route}/{quote(item, safe='')}"
    except UnicodeEncodeError:
        return f"{kind} {item!r}: its id cannot be written in a path"
    try:
        answer = send("DELETE", path)
    except OSError as exc:
        return f"{kind} {item!r}: {exc}"
    if answer.status in (200, 204, 404):
        return None
    return f"{kind} {item!r}: DELETE answered {answer.status}"
