"""What `make bench` measures: each route's requests, which ids it rotates over, who serves it.

One table, so the runner, the recorder of the ceiling's answers and the report all
agree on a route's name, its calls and whether the ceiling and upstream serve it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx

from benchmarks import dataset, servers
from benchmarks.wrk import Call

# Which ids a route's `{id}` rotates over.
SAMPLE = "sample"  # 256 sessions spread evenly through the dataset
EVERY = "every"    # every session once, so writes that grow a session touch each about once
PAGE = "page"      # the sessions of the first list page, so a write there changes the page itself
SAMPLE_IDS = 256


@dataclass(frozen=True)
class Workload:
    """One measured route.

    `calls` is the wrk cycle (one call for a plain route). `reported` names the call whose
    throughput the report gives for a cycle of several: wrk counts every request, so the
    figure is the cycle's rate times that call's share. `ceiling` says the bare app replays
    hermes-server's recorded answer for it; `upstream` that upstream 0.19.0 is driven too.
    """

    name: str
    calls: tuple[Call, ...]
    ids: str = SAMPLE
    ceiling: bool = True
    upstream: bool = True
    reported: int | None = None

    @property
    def share(self) -> float:
        """Fraction of wrk's requests the reported req/s counts."""
        return 1.0 if self.reported is None else 1.0 / len(self.calls)


_LIST = Call("GET", "/api/sessions?limit=50")
_GET = Call("GET", "/api/sessions/{id}")
_PATCH = Call("PATCH", "/api/sessions/{id}", '{"title": "bench patch {n}"}')

# In run order: the changing variants right after their plain route, before create puts new
# sessions at the head of the list page.
WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("list", (_LIST,)),
    # A response cache validated by the database's change counter would make the plain list a
    # cache hit every time: here every GET follows a PATCH of a session on that very page.
    Workload("list (changing)", (_PATCH, _LIST), ids=PAGE, ceiling=False, upstream=False, reported=1),
    Workload("get", (_GET,)),
    Workload("get (changing)", (_PATCH, _GET), ceiling=False, upstream=False, reported=1),
    Workload("messages", (Call("GET", "/api/sessions/{id}/messages"),)),
    Workload("create", (Call("POST", "/api/sessions", '{"id": "bc_{n}"}'),)),
    Workload("patch", (_PATCH,), ids=EVERY),
    Workload("fork", (Call("POST", "/api/sessions/{id}/fork", '{"title": "bench fork {n}"}'),), ids=EVERY),
    Workload("chat", (Call("POST", "/api/sessions/{id}/chat", '{"message": "hello {n}"}'),), ids=EVERY),
)}

# The soak's mix, one entry per request in a cycle of twelve (each route's first call).
SOAK_MIX = ["get", "get", "get", "get", "messages", "messages", "messages", "list", "create", "patch", "chat", "fork"]


def _key(name: str) -> str:
    return re.sub(r"[^a-z]+", "", name.lower())


def select(names: list[str] | None) -> list[Workload]:
    """The workloads named (in run order), matched ignoring case and punctuation:
    `list-changing` and `"list (changing)"` name the same one. All when `names` is None."""
    if not names:
        return list(WORKLOADS.values())
    wanted = {_key(n) for n in names}
    unknown = wanted - {_key(w) for w in WORKLOADS}
    if unknown:
        raise SystemExit(f"bench: unknown route(s) {', '.join(sorted(unknown))}; known: {', '.join(WORKLOADS)}")
    return [w for w in WORKLOADS.values() if _key(w.name) in wanted]


def sample_ids(count: int, spread: bool = False) -> list[str]:
    """Ids spread evenly over the dataset (plain rows, chain members and forks alike); all when `spread`."""
    if spread:
        return [dataset.session_id(i) for i in range(count)]
    step = max(1, count // SAMPLE_IDS)
    return [dataset.session_id(i) for i in range(0, count, step)][:SAMPLE_IDS]


def page_ids(server: servers.Server) -> list[str]:
    """The sessions of the first list page, which the changing list variant writes to."""
    answer = httpx.get(server.url + "/api/sessions?limit=50", headers={"Authorization": f"Bearer {server.key}"},
                       timeout=30)
    return [row["id"] for row in answer.json()["data"]]
