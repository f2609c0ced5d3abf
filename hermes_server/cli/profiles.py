"""The named profiles of a home, as a multiplexing 0.21.6 server finds them
(https://github.com/NousResearch/hermes-agent/pull/112854, upstream's `profiles_to_serve`).

A named profile is a directory `profiles/<name>/` of the default home whose name is a profile id
(`[a-z0-9][a-z0-9_-]{0,63}`, never `default`); it is its own Hermes home. Its key is the
`API_SERVER_KEY` of its own `.env` (read as the default home's is, cli/envfile.py), never the
process environment's or the default profile's: a profile without a key of its own of at least 16
characters is served failing closed (every keyed request 401). Multiplexing needs two profiles (the
default and one named); it is refused, with one WARNING, while a named profile's own gateway runs
(a live pid in its `gateway.pid`), as upstream's preflight refuses it.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sqlite3
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_server.config import Settings
from hermes_server.http.logs import say
from hermes_server.store.runs_idempotency import Owner

if TYPE_CHECKING:
    from hermes_server.app import HermesApp
    from hermes_server.multiplex import ProfileMount

PROFILE_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
KEY_NAME = "API_SERVER_KEY"
MIN_KEY_LENGTH = 16


def named_homes(home: Path) -> list[tuple[str, Path]]:
    """The named profiles' (name, home) under `home/profiles`, by name."""
    root = home / "profiles"
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return []
    return [(entry.name, entry) for entry in entries
            if entry.name != "default" and PROFILE_ID.fullmatch(entry.name) and entry.is_dir()]


def own_key(profile_home: Path, environ: Mapping[str, str], default_key: str | None) -> str | None:
    """The profile's own usable key from its `.env`, or None."""
    from hermes_server.cli import envfile

    try:
        values = envfile.read(profile_home / envfile.ENV_FILE, dict(environ))
    except (OSError, envfile.EnvFileError):
        return None
    key = (values.get(KEY_NAME) or "").strip()
    if len(key) < MIN_KEY_LENGTH or key == default_key:
        return None
    return key


def _pid(path: Path) -> int | None:
    """The pid a `gateway.pid` names (a number, or upstream's JSON record with `pid`)."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    pid = value.get("pid") if isinstance(value, dict) else value
    return pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None


def running_gateway(profiles: list[tuple[str, Path]]) -> str | None:
    """The first named profile whose own gateway is running (a live pid in its `gateway.pid`)."""
    for name, profile_home in profiles:
        pid = _pid(profile_home / "gateway.pid")
        if pid is not None and pid != os.getpid() and Owner(pid, 0).alive():  # a process, whenever started
            return name
    return None


def prepare_home(settings: Settings, fmt: str) -> str | None:
    """Check the state.db of `settings`' home before anything is written, and under `--migrate-home`
    add what its profile stores into (said first); why the start is refused, or None."""
    from hermes_server.app import state_db_preparer
    from hermes_server.domain.errors import SchemaMismatch
    from hermes_server.store.migrate import add_columns_now, check_existing

    preparer = state_db_preparer(settings)
    try:
        to_add = check_existing(settings.db_path, preparer)
    except SchemaMismatch as exc:
        return str(exc)
    if to_add:  # only with --migrate-home: said, and done before anything is served
        say(f"--migrate-home: adding {', '.join(column.label for column in to_add)} to {settings.db_path} for the "
            f"{settings.hermes_version} profile (schema_version and all else unchanged)", fmt)
        try:
            add_columns_now(settings.db_path, preparer)
        except (SchemaMismatch, OSError, sqlite3.Error) as exc:
            return f"--migrate-home could not change {settings.db_path}: {exc}"
    return None


def served(app: HermesApp, settings: Settings, fmt: str) -> HermesApp | ProfileMount | str:
    """What to serve: `app`, or, when its release multiplexes profiles and the home holds named
    ones, `app` and theirs mounted together (multiplex.py); a text: why the start is refused."""
    from hermes_server.app import create_app
    from hermes_server.multiplex import ProfileMount

    homes = named_homes(settings.home) if app.context.behaviour.multiplexes_profiles else []
    if not homes:
        return app
    busy = running_gateway(homes)
    if busy is not None:
        say(f"profile {busy} runs a gateway of its own ({settings.home / 'profiles' / busy / 'gateway.pid'}): "
            "serving the default profile alone, /p/<name>/ not multiplexed", fmt, level="warning", stream=sys.stderr)
        return app
    named: dict[str, HermesApp] = {}
    for name, profile_home in homes:
        key = own_key(profile_home, os.environ, settings.api_key)
        if key is None:
            say(f"profile {name} has no {KEY_NAME} of its own ({MIN_KEY_LENGTH}+ characters, not the default "
                f"profile's) in {profile_home / '.env'}: /p/{name}/ refuses every request that needs a key",
                fmt, level="warning", stream=sys.stderr)
        profile_settings = replace(settings, home=profile_home, profile=name, fixture_path=None,
                                   api_key=key if key is not None else secrets.token_hex(32))
        refused = prepare_home(profile_settings, fmt)
        if refused is not None:
            return refused
        try:
            named[name] = create_app(profile_settings)
        except ValueError as exc:
            return str(exc)
    return ProfileMount(app, named)
