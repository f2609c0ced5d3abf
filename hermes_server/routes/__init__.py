"""Thin handlers: parse → domain → store → response. Errors are raised, never rendered here.

Each module is one family of Hermes' routes, a `families.Family` (its routes and the OpenAPI
components they name) the app composes as it composes a dialect's; `FAMILIES` is the one list
of them. Where they sit in the route table is the release's order (domain/profiles.py).
"""

from __future__ import annotations

from collections.abc import Callable

from hermes_server.families import Family
from hermes_server.routes import catalog, chat, completions, discovery, jobs, responses, runs, sessions

FAMILIES: tuple[Callable[[], Family], ...] = (
    discovery.family, sessions.family, chat.family, completions.family, responses.family, runs.family,
    catalog.family, jobs.family,
)
