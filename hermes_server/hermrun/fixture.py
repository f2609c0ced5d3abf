"""Test control of the herm.run dialect: the `herm_run` fixture key and the control route.

Imported only when a fixture document or `--fixture-api` needs it; registered through the
dialect's unit (dialect.py), so test control itself knows no dialect.

The `herm_run` key of a fixture file holds agents, sessions in any status, the allowance.

The API cannot create agents, versions, tags, or sessions that are running or carry
usage; fixtures can. Checking is all-or-nothing and reports every problem at once by
JSON path (`$.herm_run.agents[0].versions[1].id`): `parse_herm_run` checks the shape,
`load` checks what needs herm-run.db (an id already stored, an agent declared only
there) inside the same transaction as the writes, so a rejected fixture writes nothing.
Session fields use the API's own camelCase names; agents and the allowance use the
names docs/herm-run.md lists. `POST /_fixture/herm-run/sessions/{session_id}` gives a
session any status or a usage snapshot, which the API itself never does.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.domain.errors import DocumentError, Problem
from hermes_server.hermrun import store as sql
from hermes_server.hermrun.envelope import HermRunJSON
from hermes_server.hermrun.errors import NotFound
from hermes_server.hermrun.projection import (
    USAGE_COUNTERS,
    USAGE_KEYS,
    session_object,
    usage_snapshot,
)
from hermes_server.hermrun.rules import (
    DEFAULT_VERSION,
    IDLE,
    STATUSES,
    Agent,
    Allowance,
    Version,
    preview_version,
)
from hermes_server.hermrun.store import HermRunStore
from hermes_server.http.body import read_json_object
from hermes_server.http.errors import ApiError
from hermes_server.http.routing import Method, Operation, Route
from hermes_server.openapi.common import AUTH_ERRORS, BODY_ERRORS
from hermes_server.testing.validate import Checker, child, describe

TOP_KEYS = ("agents", "sessions", "allowance")
AGENT_KEYS = ("id", "versions", "production", "tags", "allowance")
VERSION_KEYS = ("id", "roles")
ALLOWANCE_KEYS = ("conversations", "window_seconds")
SESSION_KEYS = (
    "id", "agentId", "subjectId", "agentVersion", "status", "role", "title", "yoloMode", "preview", "tag",
    "metadata", "usage", "createdAt", "updatedAt",
)
STATE_KEYS = ("status", "usage")
# herm.run's documented default allowance, for a fixture `allowance` that leaves a field out.
DEFAULT_ALLOWANCE = Allowance(5, 60.0)


@dataclass(frozen=True)
class SessionSeed:
    """A fixture session; its version is resolved at load time, when every agent is known."""

    path: str
    columns: dict[str, Any]
    version: str | None
    preview: bool

    @property
    def id(self) -> str:
        return self.columns["id"]


@dataclass(frozen=True)
class HermRunFixture:
    agents: tuple[Agent, ...] = ()
    sessions: tuple[SessionSeed, ...] = ()
    allowance: Allowance | None = None


@dataclass(frozen=True)
class LoadResult:
    agents_written: int
    sessions_written: int
    sessions_total: int

    def as_json(self) -> dict[str, int]:
        return {"agents_written": self.agents_written, "sessions_written": self.sessions_written,
                "sessions_total": self.sessions_total}


def _allowance(check: Checker, raw: Any, path: str) -> Allowance:
    """An allowance; a field left out takes herm.run's default (an invalid one is a problem)."""
    obj = check.obj(raw, path, ALLOWANCE_KEYS) or {}
    conversations = check.integer(obj, "conversations", path, minimum=0)
    window = check.number(obj, "window_seconds", path, nullable=False)
    if window is not None and window <= 0:
        check.fail(child(path, "window_seconds"), "must be greater than 0")
        window = None
    return Allowance(DEFAULT_ALLOWANCE.conversations if conversations is None else conversations,
                     DEFAULT_ALLOWANCE.window_seconds if window is None else window)


def _names(check: Checker, obj: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
    """A list of non-empty strings, each once."""
    names: list[str] = []
    for index, value in enumerate(check.items(obj, key, path)):
        where = child(child(path, key), index)
        if not isinstance(value, str) or not value.strip():
            check.fail(where, f"must be a non-empty string, got {describe(value)}")
        elif value in names:
            check.fail(where, f"duplicate {value!r}")
        elif check.storable(value, where):
            names.append(value)
    return tuple(names)


def _versions(check: Checker, obj: Mapping[str, Any], path: str) -> tuple[Version, ...]:
    if "versions" not in obj or obj["versions"] is None:
        return (Version(DEFAULT_VERSION),)
    raw_versions = check.items(obj, "versions", path)
    if not raw_versions and isinstance(obj["versions"], list):
        check.fail(child(path, "versions"), "must list at least one version")
    versions: list[Version] = []
    for index, raw in enumerate(raw_versions):
        where = child(child(path, "versions"), index)
        item = check.obj(raw, where, VERSION_KEYS)
        if item is None:
            continue
        version_id = check.text(item, "id", where, required=True, non_empty=True)
        roles = _names(check, item, "roles", where)
        if version_id is None:
            continue
        if any(v.id == version_id for v in versions):
            check.fail(child(where, "id"), f"duplicate version {version_id!r}")
        else:
            versions.append(Version(version_id, roles))
    return tuple(versions)


def _tags(check: Checker, obj: Mapping[str, Any], path: str, ids: list[str]) -> dict[str, str]:
    """Development tag names, each naming one of the agent's versions."""
    raw = obj.get("tags")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        check.fail(child(path, "tags"), f"must be an object of tag names to version ids, got {describe(raw)}")
        return {}
    tags: dict[str, str] = {}
    for name, target in raw.items():
        where = child(child(path, "tags"), name)
        if not name.strip():
            check.fail(where, "a tag name must not be empty")
        elif not isinstance(target, str) or target not in ids:
            check.fail(where, f"must name one of the agent's versions, got {target!r}")
        elif check.storable(name, where):
            tags[name] = target
    return tags


def _agent(check: Checker, raw: Any, path: str) -> Agent | None:
    obj = check.obj(raw, path, AGENT_KEYS)
    if obj is None:
        return None
    agent_id = check.text(obj, "id", path, required=True, non_empty=True)
    versions = _versions(check, obj, path)
    ids = [v.id for v in versions]
    production = check.text(obj, "production", path, non_empty=True)
    if production is None and "production" not in obj and ids:
        production = ids[0]
    elif production is not None and production not in ids:
        check.fail(child(path, "production"), f"{production!r} is not one of the agent's versions")
    tags = _tags(check, obj, path, ids)
    allowance = None if obj.get("allowance") is None else _allowance(check, obj["allowance"], child(path, "allowance"))
    if agent_id is None or production is None or not versions:
        return None
    return Agent(agent_id, versions, production, tags, allowance)


def _metadata(check: Checker, obj: Mapping[str, Any], path: str) -> dict[str, str]:
    raw = obj.get("metadata")
    where = child(path, "metadata")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        check.fail(where, f"must be an object of strings, got {describe(raw)}")
        return {}
    metadata: dict[str, str] = {}
    for key, value in raw.items():
        if not isinstance(value, str):
            check.fail(child(where, key), f"must be a string, got {describe(value)}")
        elif check.storable(key, where) and check.storable(value, child(where, key)):
            metadata[key] = value
    return metadata


def parse_usage(check: Checker, raw: Any, path: str) -> dict[str, Any] | None:
    """A usage snapshot (snake_case, as the API shows it); missing counters are 0."""
    obj = check.obj(raw, path, USAGE_KEYS)
    if obj is None:
        return None
    values: dict[str, Any] = {key: check.integer(obj, key, path, minimum=0) for key in USAGE_COUNTERS}
    values["estimated_cost_usd"] = check.number(obj, "estimated_cost_usd", path, minimum=0)
    values["context_max"] = check.integer(obj, "context_max", path, nullable=True, minimum=1)
    return usage_snapshot(values)


def _session(check: Checker, raw: Any, path: str, now: float) -> SessionSeed | None:
    obj = check.obj(raw, path, SESSION_KEYS)
    if obj is None:
        return None
    created = check.timestamp(obj, "createdAt", path)
    created = now if created is None else created
    updated = check.timestamp(obj, "updatedAt", path)
    columns: dict[str, Any] = {
        "id": check.text(obj, "id", path, required=True, non_empty=True),
        "agent_id": check.text(obj, "agentId", path, required=True, non_empty=True),
        "subject_id": check.text(obj, "subjectId", path, required=True, non_empty=True),
        "status": check.choice(obj, "status", path, STATUSES, default=IDLE),
        "role": check.text(obj, "role", path, non_empty=True),
        "title": check.text(obj, "title", path),
        "yolo_mode": int(check.boolean(obj, "yoloMode", path, False)),
        "preview": int(check.boolean(obj, "preview", path, False)),
        "tag": check.text(obj, "tag", path, non_empty=True),
        "metadata": _metadata(check, obj, path),
        "usage": None if obj.get("usage") is None else parse_usage(check, obj["usage"], child(path, "usage")),
        "created_at": created,
        "updated_at": created if updated is None else updated,
    }
    version = check.text(obj, "agentVersion", path, non_empty=True)
    if columns["preview"] and columns["tag"] is not None:
        check.fail(child(path, "tag"), "preview: true and tag are mutually exclusive")
    return SessionSeed(path, columns, version, bool(columns["preview"]))


def _unique(check: Checker, items: list[tuple[str, str]], what: str) -> None:
    """(id, path) pairs: each id once."""
    seen: dict[str, str] = {}
    for item_id, where in items:
        if item_id in seen:
            check.fail(where, f"duplicate {what} id {item_id!r} (also at {seen[item_id]})")
        seen.setdefault(item_id, where)


def parse_herm_run(value: Any, now: float, path: str = "$.herm_run") -> HermRunFixture:
    """Check the `herm_run` value of a fixture; `now` is the creation time of sessions without one."""
    check = Checker()
    top = check.obj(value, path, TOP_KEYS)
    if top is None:
        raise DocumentError(check.problems)
    agents: list[tuple[str, Agent]] = []
    for index, raw in enumerate(check.items(top, "agents", path)):
        where = child(child(path, "agents"), index)
        agent = _agent(check, raw, where)
        if agent is not None:
            agents.append((where, agent))
    sessions = [s for i, raw in enumerate(check.items(top, "sessions", path))
                if (s := _session(check, raw, child(child(path, "sessions"), i), now)) is not None]
    allowance = None if top.get("allowance") is None else _allowance(check, top["allowance"], child(path, "allowance"))
    _unique(check, [(agent.id, where) for where, agent in agents], "agent")
    _unique(check, [(s.id, child(s.path, "id")) for s in sessions], "session")
    check.raise_if_any()
    return HermRunFixture(tuple(agent for _, agent in agents), tuple(sessions), allowance)


def parse_state(document: Any) -> tuple[str | None, dict[str, Any] | None]:
    """Test control's `{"status", "usage"}` for one session (at least one of them)."""
    check = Checker()
    obj = check.obj(document, "$", STATE_KEYS)
    if obj is not None and obj.get("status") is None and obj.get("usage") is None:
        check.fail("$", "give status, usage or both")
    status = None if obj is None else check.choice(obj, "status", "$", STATUSES)
    usage = None if obj is None or obj.get("usage") is None else parse_usage(check, obj["usage"], "$.usage")
    check.raise_if_any("invalid_state_change")
    return status, usage


def _resolve(agent: Agent, seed: SessionSeed) -> Problem | str:
    """The version id a fixture session of `agent` records, or the problem with it."""
    tag = seed.columns["tag"]
    if seed.version is not None:
        version = agent.version(seed.version)
        if version is None:
            return Problem(child(seed.path, "agentVersion"), f"agent {agent.id!r} has no version {seed.version!r}")
    elif tag is not None:
        target = agent.tags.get(tag)
        if target is None:
            return Problem(child(seed.path, "tag"), f"agent {agent.id!r} has no development tag {tag!r}")
        version = agent.version(target)
    else:
        version = preview_version(agent) if seed.preview else agent.version(agent.production)
    assert version is not None  # tags and production always name a listed version
    role = seed.columns["role"]
    if role is not None and role not in version.roles:
        return Problem(child(seed.path, "role"), f"version {version.id!r} of agent {agent.id!r} does not define it")
    return version.id


def apply(conn: sqlite3.Connection, fixture: HermRunFixture, replace: bool) -> LoadResult:
    """Write `fixture` into herm-run.db (emptied first when `replace`); raise to write nothing."""
    if replace:
        sql.clear(conn)
    for agent in fixture.agents:
        sql.put_agent(conn, agent)
    if fixture.allowance is not None:
        sql.put_allowance(conn, fixture.allowance)
    problems: list[Problem] = []
    taken = sql.stored_session_ids(conn, [s.id for s in fixture.sessions])
    for seed in fixture.sessions:
        if seed.id in taken:
            problems.append(Problem(child(seed.path, "id"), f"session {seed.id!r} already exists in herm-run.db"))
            continue
        found = sql.find_agent(conn, seed.columns["agent_id"])
        if found is None:
            problems.append(Problem(child(seed.path, "agentId"),
                                    f"unknown agent {seed.columns['agent_id']!r}: not in the fixture or herm-run.db"))
            continue
        version = _resolve(found, seed)
        if isinstance(version, Problem):
            problems.append(version)
        else:
            sql.insert_session(conn, {**seed.columns, "agent_version": version})
    if problems:
        raise DocumentError(problems)
    return LoadResult(len(fixture.agents), len(fixture.sessions), sql.session_count(conn))


async def load(store: HermRunStore, fixture: HermRunFixture, *, replace: bool = False) -> LoadResult:
    """Merge `fixture` into herm-run.db (or make it exactly `fixture`) in one transaction.

    Merging replaces the definition of an agent the fixture declares again (moving a
    tag, say) and adds its sessions; sessions already stored keep their versions.
    """
    return await store.db.write(apply, fixture, replace)


def control_routes(store: HermRunStore) -> list[Route]:
    """The dialect's /_fixture/ route (added only with --fixture-api and --herm-run)."""

    async def set_state(request: Request, ctx: Any) -> Response:
        """POST {"status", "usage"}: the session as the API now shows it (Hermes's envelope on refusals)."""
        status, usage = parse_state(await read_json_object(request))
        sid = request.scope["path_params"]["session_id"]
        try:
            row = await store.set_state(sid, ctx.now(), status=status, usage=usage)
        except NotFound as exc:
            raise ApiError(404, exc.message, "session_not_found") from None
        return HermRunJSON(session_object(row))

    return [Route("fixture_herm_run_session", "/_fixture/herm-run/sessions/{session_id}", {
        "POST": Method(set_state, Operation(
            summary="Give a herm.run session a status and/or a usage snapshot (to reach the 409s)",
            responses={200: "HermRunSession", 404: "NotFound", **BODY_ERRORS, **AUTH_ERRORS},
            body="FixtureRequest")),
    })]
