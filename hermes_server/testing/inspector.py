"""The inspector: a page a person opens to see sessions, lineage, the journal and the audit.

Served only with `serve --fixture-api`, under /_fixture/ui/. The page's files (HTML,
JavaScript, CSS, shipped inside the package beside this module) hold no data and are
served without the key; the page reads everything from the JSON routes below (and the
other /_fixture/ routes) with `Authorization: Bearer`, taking the key from the URL
fragment, which browsers never send. Its CSP allows its own scripts and styles only.

Its data routes are /_fixture/ routes rather than /api/ reads on purpose: /_fixture/
requests are not journaled, so a page left open while a suite runs neither adds rows to
the journal nor counts as the connector reading a session (docs/fixtures.md, "The
inspector").
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.http.errors import ApiError
from hermes_server.http.responses import ExactResponse, HermesJSONResponse
from hermes_server.http.routing import Endpoint, Method, Operation, Route
from hermes_server.openapi.common import AUTH_ERRORS, STORE_ERRORS
from hermes_server.store import lineage, messages
from hermes_server.store.db import fetch_dicts

if TYPE_CHECKING:
    from hermes_server.context import AppContext

FILES = Path(__file__).with_name("inspector")
PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
            "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
_MEDIA = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8"}

# How many sessions the overview and one lineage show at most (a page, not an export).
MAX_SESSIONS = 500
_COLUMNS = ("s.id, s.parent_session_id, s.source, s.title, s.started_at, s.ended_at, s.end_reason, "
            "s.message_count, s.tool_call_count, "
            f"{lineage.MARKER_BRANCHED.format(a='s')} IS NOT NULL AS branched, "
            f"{lineage.MARKER_DELEGATE.format(a='s')} IS NOT NULL AS delegate")


class StaticFile(ExactResponse):
    """One of the page's files: no data in it, so no key needed; the page's own CSP."""

    def __init__(self, body: bytes, media_type: str) -> None:
        self.media_type = media_type
        super().__init__(body, headers={
            "Content-Security-Policy": PAGE_CSP, "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache"})


def _kind(row: dict[str, Any], parents: dict[str, dict[str, Any]]) -> str:
    """How a session relates to its parent (store/lineage.py's three kinds of child)."""
    parent = parents.get(row["parent_session_id"] or "")
    if row["parent_session_id"] is None:
        return "root"
    if row["delegate"]:
        return "delegate"
    # A fork made over the API leaves no marker on the child: its source ended `branched`.
    if row["branched"] or (parent is not None and parent["end_reason"] == "branched"):
        return "fork"
    if parent is not None and parent["end_reason"] == "compression" and row["source"] != "tool":
        return "compression"
    return "child"


def _node(row: dict[str, Any], parents: dict[str, dict[str, Any]]) -> dict[str, Any]:
    node = {key: value for key, value in row.items() if key not in ("branched", "delegate")}
    node["kind"] = _kind(row, parents)
    return node


def all_sessions(conn: sqlite3.Connection) -> dict[str, Any]:
    """The newest sessions, children included, each with its kind of parent link."""
    rows = fetch_dicts(conn, f"SELECT {_COLUMNS} FROM sessions s ORDER BY s.started_at DESC, s.id DESC LIMIT ?",
                       (MAX_SESSIONS + 1,))
    parent_ids = sorted({r["parent_session_id"] for r in rows if r["parent_session_id"]})
    parents = {r["id"]: r for r in _rows(conn, "s.id", parent_ids)}
    data = [_node(row, parents) for row in rows[:MAX_SESSIONS]]
    return {"object": "list", "data": data, "truncated": len(rows) > MAX_SESSIONS}


def _rows(conn: sqlite3.Connection, column: str, ids: list[str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for start in range(0, len(ids), 500):  # below SQLite's bound-parameter limit
        chunk = ids[start:start + 500]
        holes = ",".join("?" * len(chunk))
        found += fetch_dicts(conn, f"SELECT {_COLUMNS} FROM sessions s WHERE {column} IN ({holes}) "
                                   "ORDER BY s.started_at, s.id", chunk)
    return found


def session_tree(conn: sqlite3.Connection, session_id: str) -> dict[str, Any] | None:
    """Every session of `session_id`'s tree: up to its root, then every descendant (breadth
    first); and the live tip of `session_id` (where its compression chain now continues, as
    the list and /messages resolve it). None when the session does not exist."""
    start = _rows(conn, "s.id", [session_id])
    if not start:
        return None
    root, seen = start[0], {session_id}
    for _ in range(lineage.MAX_TIP_HOPS):
        parent = _rows(conn, "s.id", [root["parent_session_id"]]) if root["parent_session_id"] else []
        if not parent or parent[0]["id"] in seen:
            break
        root = parent[0]
        seen.add(root["id"])
    by_id = {root["id"]: root}
    level = [root["id"]]
    while level and len(by_id) < MAX_SESSIONS:
        children = [r for r in _rows(conn, "s.parent_session_id", level) if r["id"] not in by_id]
        by_id.update((r["id"], r) for r in children[:MAX_SESSIONS - len(by_id)])
        level = [r["id"] for r in children]
    nodes = [_node(row, by_id) for row in by_id.values()]
    if root["parent_session_id"] is not None:  # a dangling parent (deleted) or a cycle: still the root here
        nodes[0]["kind"] = "root"
    return {"object": "hermes_server.lineage", "session_id": session_id, "root": root["id"],
            "tip": lineage.compression_tip(conn, session_id), "nodes": nodes,
            "truncated": len(by_id) >= MAX_SESSIONS}


def _not_found(session_id: str) -> ApiError:
    return ApiError(404, f"Session not found: {session_id}", "session_not_found")


class InspectorRoutes:
    """The page's files (read once) and its data handlers."""

    def __init__(self) -> None:
        self.files = {path.name: path.read_bytes() for path in FILES.iterdir() if path.suffix in _MEDIA}

    def _file(self, name: str) -> Response:
        return StaticFile(self.files[name], _MEDIA[Path(name).suffix])

    async def page(self, request: Request, ctx: AppContext) -> Response:
        """GET /_fixture/ui/ and /_fixture/ui/sessions/{id}: the same page; its script reads the path."""
        return self._file("index.html")

    async def script(self, request: Request, ctx: AppContext) -> Response:
        return self._file("app.js")

    async def style(self, request: Request, ctx: AppContext) -> Response:
        return self._file("app.css")

    async def sessions(self, request: Request, ctx: AppContext) -> Response:
        """GET /_fixture/sessions: the newest 500 sessions, children included."""
        await ctx.db.ensure_open()
        return HermesJSONResponse(await ctx.db.read(all_sessions))

    async def lineage(self, request: Request, ctx: AppContext) -> Response:
        """GET /_fixture/sessions/{id}/lineage: the whole tree the session belongs to."""
        session_id = request.path_params["session_id"]
        await ctx.db.ensure_open()
        tree = await ctx.db.read(session_tree, session_id)
        if tree is None:
            raise _not_found(session_id)
        return HermesJSONResponse(tree)

    async def transcript(self, request: Request, ctx: AppContext) -> Response:
        """GET /_fixture/sessions/{id}/messages: that exact session's active messages (no tip following)."""
        session_id = request.path_params["session_id"]
        await ctx.db.ensure_open()
        if not await ctx.db.read(lambda conn: bool(_rows(conn, "s.id", [session_id]))):
            raise _not_found(session_id)
        rows = await ctx.db.read(messages.active_messages, session_id)
        return HermesJSONResponse({"object": "list", "session_id": session_id, "data": rows})


def _file_op(handler: Endpoint, summary: str) -> dict[str, Method]:
    return {"GET": Method(handler, Operation(summary=summary, responses={200: "InspectorFile"}, security=None))}


def _data_op(handler: Endpoint, summary: str, not_found: bool = False) -> dict[str, Method]:
    errors = {**STORE_ERRORS, 404: "NotFound"} if not_found else {**AUTH_ERRORS, **STORE_ERRORS}
    return {"GET": Method(handler, Operation(summary=summary, responses={200: "FixtureReply", **errors}))}


def build_inspector_routes() -> list[Route]:
    """The inspector's routes (named `fixture_*`, so the journal does not record them)."""
    ui = InspectorRoutes()
    return [
        Route("fixture_ui", "/_fixture/ui/", _file_op(ui.page, "The inspector page (no data without the key)")),
        Route("fixture_ui_session", "/_fixture/ui/sessions/{session_id}",
              _file_op(ui.page, "The inspector page of one session's lineage and transcript")),
        Route("fixture_ui_script", "/_fixture/ui/app.js", _file_op(ui.script, "The inspector's script")),
        Route("fixture_ui_style", "/_fixture/ui/app.css", _file_op(ui.style, "The inspector's style sheet")),
        Route("fixture_sessions", "/_fixture/sessions", _data_op(ui.sessions, "Every session, children included")),
        Route("fixture_lineage", "/_fixture/sessions/{session_id}/lineage",
              _data_op(ui.lineage, "Every session of one session's tree", not_found=True)),
        Route("fixture_transcript", "/_fixture/sessions/{session_id}/messages",
              _data_op(ui.transcript, "One exact session's active messages", not_found=True)),
    ]
