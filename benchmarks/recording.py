"""hermes-server's real answers, recorded for the ceiling to replay, and the check that it does.

"hs / ceiling" only compares like with like when the bare app sends what hermes-server
sends: the same status, the same headers in the same order, the same body bytes. So
before a run each measured request is asked of hermes-server once and its answer kept:

- reads (`GET`) exactly per path, from the measured server itself (reading changes nothing);
- writes once per route, on a throwaway copy of the dataset (the measured one stays as it
  was), keyed by the route's pattern: the ceiling answers every id with that one answer.

`date` and `server` are left out (uvicorn adds them to both servers' answers itself);
`content-length` is kept in its place and recomputed by the ceiling from the body.
`check` then asks the started ceiling for every recorded answer over HTTP and fails the
run when a single byte of status, header set or body differs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import httpx

from benchmarks.workloads import Workload
from benchmarks.wrk import Call

# Added by uvicorn on the way out, for hermes-server and the ceiling alike.
TRANSPORT_HEADERS = frozenset({"date", "server"})


@dataclass(frozen=True)
class Answer:
    """One recorded exchange: the request that produced it and what came back."""

    method: str
    route: str  # the path pattern the ceiling routes on (`{id}` for the session id)
    path: str
    request_body: str | None
    status: int
    headers: list[tuple[str, str]]  # in wire order, without TRANSPORT_HEADERS
    body: str  # latin-1, so any byte survives the JSON file the ceiling reads

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _ask(client: httpx.Client, call: Call, path: str, body: str | None) -> Answer:
    reply = client.request(call.method, path, content=None if body is None else body.encode("utf-8"))
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in reply.headers.raw
               if k.decode("latin-1").lower() not in TRANSPORT_HEADERS]
    return Answer(call.method, call.path.split("?", 1)[0], path, body, reply.status_code, headers,
                  reply.content.decode("latin-1"))


def _client(url: str, key: str | None) -> httpx.Client:
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return httpx.Client(base_url=url, headers=headers, timeout=30)


def replay_key(call: Call, path: str | None = None) -> str:
    """Where the ceiling files an answer: `METHOD path` for a read, `METHOD pattern` for a write."""
    return f"{call.method} {path if path is not None else call.path}"


def _succeeded(answers: dict[str, Answer]) -> dict[str, Answer]:
    """The answers, unless one is an error: replaying a refusal would measure the wrong route."""
    failed = [f"{key} answered {a.status}: {a.body[:200]}" for key, a in answers.items() if a.status >= 400]
    if failed:
        raise RuntimeError("recording: hermes-server refused a measured request:\n  " + "\n  ".join(failed[:10]))
    return answers


def record_reads(url: str, key: str | None, workloads: list[Workload], ids: list[str]) -> dict[str, Answer]:
    """Every distinct read path the ceiling workloads send, asked of the measured server."""
    answers: dict[str, Answer] = {}
    with _client(url, key) as client:
        for call in (c for w in workloads for c in w.calls if c.method == "GET"):
            for sid in ids if "{id}" in call.path else ids[:1]:
                path, body = call.expand(sid, "")
                answers.setdefault(replay_key(call, path), _ask(client, call, path, body))
    return _succeeded(answers)


def record_writes(url: str, key: str | None, workloads: list[Workload], session: str, unique: str) -> dict[str, Answer]:
    """One real answer per write route, from a server over a copy the run throws away."""
    answers: dict[str, Answer] = {}
    with _client(url, key) as client:
        for call in (c for w in workloads for c in w.calls if c.method != "GET"):
            path, body = call.expand(session, unique)
            answers.setdefault(replay_key(call), _ask(client, call, path, body))
    return _succeeded(answers)


def check(ceiling_url: str, answers: dict[str, Answer]) -> None:
    """Ask the ceiling for every recorded answer; raise, naming what differs, unless all are identical."""
    wrong: list[str] = []
    with _client(ceiling_url, None) as client:
        for key, want in answers.items():
            got = _ask(client, Call(want.method, want.route), want.path, want.request_body)
            for field in ("status", "headers", "body"):
                if getattr(got, field) != getattr(want, field):
                    wrong.append(f"{key}: {field} {str(getattr(got, field))[:200]!r} "
                                 f"!= hermes-server's {str(getattr(want, field))[:200]!r}")
    if wrong:
        raise RuntimeError(f"ceiling: {len(wrong)} answer(s) differ from hermes-server's:\n  " + "\n  ".join(wrong[:10]))
