"""What the server's agent could use, and the callbacks for other platforms: skills, toolsets,
platform events and the managed-cron fire webhook, each answering as 0.19.0 does.

Skills are read from `HERMES_HOME/skills/` as Hermes reads them. The toolset list is
0.19.0's answer for a home with the minimal configuration (hermes-server loads no tools),
including its one visible change: the terminal toolset lists two more tools once the
process has run its first agent turn. Platform events and cron fires need a gateway
with platform adapters or a configured Chronos verifier; without them 0.19.0 refuses
every such request before looking at its body or key, and so does this. A cron fire
is authenticated by its own token (the `fireToken` scheme, not the API key): with no
verifier configured the pipeline's check of that scheme refuses every one.
"""

from __future__ import annotations

import json
import os
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.api.errors import InvalidFireToken
from hermes_server.context import AppContext
from hermes_server.domain import route_ids
from hermes_server.families import Family
from hermes_server.http.errors import ApiError
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Method, Operation, Route
from hermes_server.openapi.catalog_schemas import COMPONENTS, FIRE_TOKEN
from hermes_server.openapi.common import AUTH_ERRORS

_TOOLSETS_FILE = Path(__file__).resolve().parent.parent / "data" / "toolsets-0.19.0.json"
# Tools the terminal toolset registers lazily, with the first agent turn.
_TERMINAL_AFTER_FIRST_TURN = ["close_terminal", "process", "read_terminal", "terminal"]

_SKIPPED_DIRS = frozenset((
    ".git", ".github", ".hub", ".archive", ".venv", "venv", "node_modules", "site-packages",
    "__pycache__", ".tox", ".nox", ".pytest_cache", ".mypy_cache", ".ruff_cache",
))
# Directories inside a skill holding its supporting files, never skills of their own.
_SUPPORT_DIRS = frozenset(("references", "templates", "assets", "scripts"))
MAX_SKILL_NAME = 64
MAX_SKILL_DESCRIPTION = 1024
_PLATFORM = re.compile(r"[a-z0-9_]+")


_FENCE_END = re.compile(r"\n---\s*\n")
# Skill `platforms` names and the sys.platform prefix each stands for.
_OS_NAMES = {"macos": "darwin", "linux": "linux", "windows": "win32"}


def _front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The YAML between leading `---` fences (a BOM first is ignored), and the body after it.

    Read with PyYAML when it is installed, else (and for YAML it refuses) as `key: value` lines.
    """
    text = text[1:] if text.startswith("\ufeff") else text
    if not text.startswith("---"):
        return {}, text
    fence = _FENCE_END.search(text[3:])
    if not fence:
        return {}, text
    header, body = text[3:fence.start() + 3], text[fence.end() + 3:]
    try:
        import yaml

        parsed = yaml.safe_load(header)
        return (parsed if isinstance(parsed, dict) else {}), body
    except Exception:  # noqa: BLE001 - no PyYAML, or YAML it refuses: the simple reading, as Hermes falls back to
        fields: dict[str, Any] = {}
        for line in header.strip().split("\n"):
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        return fields, body


def _for_this_os(platforms: Any) -> bool:
    if not platforms:
        return True
    names = platforms if isinstance(platforms, list) else [platforms]
    return any(sys.platform.startswith(_OS_NAMES.get(str(name).lower().strip(), str(name).lower().strip()))
               for name in names)


def _skill(path: Path, root: Path) -> dict[str, Any] | None:
    """One skill's listing entry; None for a file Hermes would skip (unreadable, another OS, bad fields)."""
    try:
        fields, body = _front_matter(path.read_text(encoding="utf-8")[:4000])
        if not _for_this_os(fields.get("platforms")):
            return None
        name = fields.get("name", path.parent.name)[:MAX_SKILL_NAME]
        description = fields.get("description", "")
        if not description:
            description = next((line.strip() for line in body.strip().split("\n")
                                if line.strip() and not line.strip().startswith("#")), "")
        if len(description) > MAX_SKILL_DESCRIPTION:
            description = description[:MAX_SKILL_DESCRIPTION - 3] + "..."
    except (OSError, UnicodeDecodeError, TypeError, AttributeError):
        return None
    parts = path.relative_to(root).parts
    return {"name": name, "description": description, "category": parts[0] if len(parts) >= 3 else None}


def list_skills(root: Path) -> list[dict[str, Any]]:
    """Every SKILL.md below `root` (links followed), first of each name, sorted by category and name."""
    found: list[dict[str, Any]] = []
    names: set[str] = set()
    if not root.is_dir():
        return found
    for directory, subdirs, files in os.walk(root, followlinks=True):
        here = Path(directory)
        subdirs[:] = sorted(d for d in subdirs if d not in _SKIPPED_DIRS
                            and not (d in _SUPPORT_DIRS and (here / "SKILL.md").exists()))
        if "SKILL.md" in files:
            skill = _skill(here / "SKILL.md", root)
            if skill and skill["name"] not in names:
                names.add(skill["name"])
                found.append(skill)
    return sorted(found, key=lambda s: (s["category"] or "", s["name"]))


async def skills(request: Request, ctx: AppContext) -> Response:
    """GET /v1/skills: the skills installed in HERMES_HOME."""
    try:
        data = list_skills(ctx.settings.home / "skills")
    except OSError:
        raise ApiError(500, "Failed to enumerate skills", type_="server_error") from None
    return HermesJSONResponse({"object": "list", "data": data})


@lru_cache(maxsize=1)
def _toolsets() -> dict[str, Any]:
    return json.loads(_TOOLSETS_FILE.read_text(encoding="utf-8"))


def toolsets_body(after_first_turn: bool) -> dict[str, Any]:
    """0.19.0's toolset list; the terminal toolset grows once an agent turn has run."""
    body = json.loads(json.dumps(_toolsets()))
    if after_first_turn:
        for toolset in body["data"]:
            if toolset["name"] == "terminal":
                toolset["tools"] = list(_TERMINAL_AFTER_FIRST_TURN)
    return body


async def toolsets(request: Request, ctx: AppContext) -> Response:
    """GET /v1/toolsets."""
    return HermesJSONResponse(toolsets_body(ctx.turns.started > 0))


async def platform_event(request: Request, ctx: AppContext) -> Response:
    """POST /api/platforms/{platform}/events: no platform adapter is connected (no API key involved)."""
    name = request.path_params["platform"].lower().replace("-", "_")
    if not _PLATFORM.fullmatch(name):
        raise ApiError(400, "Invalid platform name", "invalid_platform")
    raise ApiError(503, "Platform adapter is not connected", "platform_unavailable")


def refuse_fire_token(request: Request) -> None:
    """The check of the `fireToken` scheme: no fire-token verifier is configured, so no token
    is valid (with or without the API key, as in 0.19.0)."""
    raise InvalidFireToken()


async def cron_fire(request: Request, ctx: AppContext) -> Response:
    """POST /api/cron/fire once its token is verified: never, as `refuse_fire_token` refuses
    every one; the answer stays that refusal."""
    raise InvalidFireToken()


def routes() -> list[Route]:
    """Skills and toolsets (advertised), platform events and cron fire (not advertised, as upstream)."""
    return [
        Route(route_ids.SKILLS, "/v1/skills", {
            "GET": Method(skills, Operation(
                summary="List skills", description="The skills installed in HERMES_HOME/skills, as Hermes reads them.",
                responses={200: "SkillList", 500: "ServerError", **AUTH_ERRORS},
                capability="skills", features=("skills_api",)))}),
        Route(route_ids.TOOLSETS, "/v1/toolsets", {
            "GET": Method(toolsets, Operation(
                summary="List toolsets",
                description="0.19.0's toolsets for a home with the minimal configuration (the terminal toolset lists "
                            "more tools after the first agent turn).",
                responses={200: "ToolsetList", **AUTH_ERRORS}, capability="toolsets"))}),
        Route(route_ids.PLATFORM_EVENTS, "/api/platforms/{platform}/events", {
            "POST": Method(platform_event, Operation(
                summary="Platform event",
                description="Callbacks of messaging platforms: with no platform adapter connected, every one is "
                            "refused (503) before its body or key is read, as 0.19.0 without a gateway.",
                responses={400: "BadRequest", 503: "PlatformUnavailable"}, security=None))}),
        Route(route_ids.CRON_FIRE, "/api/cron/fire", {
            "POST": Method(cron_fire, Operation(
                summary="Cron fire webhook",
                description="The managed-cron service's callback, authenticated by a token of its own: with no "
                            "verifier configured, every call is 401.",
                responses={401: "InvalidFireToken"}, security=FIRE_TOKEN))}),
    ]


def family() -> Family:
    """Skills, toolsets and the callbacks of other platforms as a unit of the app: their OpenAPI
    components, and the check of the fire webhook's own scheme."""
    return Family("catalog", routes(), components=COMPONENTS, checks={FIRE_TOKEN: refuse_fire_token})
