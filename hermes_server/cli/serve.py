"""`hermes-server serve`: check everything, bind the socket, then run uvicorn on it."""

from __future__ import annotations

import argparse
import ipaddress
import signal
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_server import UPSTREAM_VERSION
from hermes_server.cli.options import GROUP_TITLES, SERVE_OPTIONS, Option, OptionError, resolve_all
from hermes_server.config import Settings
from hermes_server.dialects import KNOWN
from hermes_server.domain.keys import key_problem
from hermes_server.families import FixtureParts
from hermes_server.http.logs import configure_logging, say

if TYPE_CHECKING:
    import uvicorn

    from hermes_server.app import HermesApp


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_options() -> tuple[tuple[Option, ...], dict[str, str]]:
    """Every `serve` row (Hermes's, then each known dialect's) and the titles of their groups."""
    rows = SERVE_OPTIONS + tuple(row for dialect in KNOWN for row in dialect.options)
    return rows, {**GROUP_TITLES, **{dialect.group: dialect.group_title for dialect in KNOWN}}


def settings_from_args(args: argparse.Namespace) -> tuple[Settings, bool]:
    """Resolve flags and environment into Settings (each known dialect's rows into `extras`),
    and whether --no-auth is on; raises OptionError on a bad value."""
    values = resolve_all(args, SERVE_OPTIONS)
    extras = [resolve_all(args, dialect.options) for dialect in KNOWN]
    no_auth = values.pop("no_auth")
    key = values.pop("api_key")
    if no_auth:
        key = None
    elif key is not None:
        problem = key_problem(key)
        if problem:
            raise OptionError(f"refusing to start: {problem}")
        key = key.strip()
    settled: dict[str, object] = {}
    for dialect, own in zip(KNOWN, extras, strict=True):
        sources = {option.dest: option.source(getattr(args, option.dest)) for option in dialect.options}
        refusal = dialect.refusal_when_off(sources, bool(own[dialect.switch]))
        if refusal:
            raise OptionError(refusal)
        settled.update(dialect.settle(own))
    return Settings(api_key=key, extras=settled, **values), no_auth


def _exit_after_shutdown(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _announce_key(settings: Settings, no_auth: bool) -> tuple[Settings, Path | None] | str:
    """Settings with the key to require (the kept one when none was given) and the key file this
    call wrote (None when it wrote none), or a refusal."""
    from hermes_server.cli.keyfile import KeyFileError, stored_key

    fmt = settings.log_format
    if settings.api_key is not None or no_auth:
        return settings, None
    try:
        kept = stored_key(settings.home)
    except KeyFileError as exc:
        return f"refusing to start: {exc}"
    if kept.generated:
        where = (f"not kept ({kept.not_kept} writing {kept.path}): a restart makes a new one" if kept.not_kept
                 else f"kept in {kept.path} (mode 0600) and reused on restart")
        say(f"generated API key (send as 'Authorization: Bearer <key>'): {kept.key} ({where})", fmt)
    else:
        say(f"API key read from {kept.path} (send as 'Authorization: Bearer <key>'; "
            "delete the file for a new key, or set API_SERVER_KEY)", fmt)
    written = kept.path if kept.generated and not kept.not_kept else None
    return Settings(**{**settings.__dict__, "api_key": kept.key}), written


def _warn_unusable_home(settings: Settings) -> None:
    """Say once, plainly, to someone at a terminal that a home which cannot hold state.db makes
    every session route fail. The server still starts (a container must stay up and report
    itself not ready), and the log names the problem as it does without a terminal."""
    from hermes_server.store.home_check import plainly, probe

    problem = probe(settings.home)
    if problem is not None:
        say(f"nothing will work until this is fixed: {plainly(problem, settings.home)}, so state.db cannot be "
            f"created there and every session route answers 503. Point --home (HERMES_HOME) at a writable "
            "directory.", settings.log_format, level="error", stream=sys.stderr)


def serving_line(settings: Settings) -> str:
    """Where the server listens, and that it answers as 0.19.0 does when `--upstream-quirks` is on
    (someone reading its answers must know they are seeing 0.19.0's failures on purpose)."""
    line = f"serving http://{settings.host}:{settings.port} over {settings.db_path}"
    if settings.upstream_quirks:
        line += (f"; upstream quirks ON: answering as hermes-agent {UPSTREAM_VERSION} does, text/plain 500s "
                 "included, wherever docs/differences.md lists a deviation")
    return line


def uvicorn_config(app: HermesApp, settings: Settings) -> uvicorn.Config:
    """uvicorn's settings for this app: the one place they are chosen (the suite's in-process
    servers use them too). Imported here, not at the top: `hermes-server --help` stays light."""
    import uvicorn

    from hermes_server.cli.head_limits import HeadLimits
    from hermes_server.cli.transport import protocol_for
    return uvicorn.Config(
        app,
        log_level=settings.log_level,
        # Our handler and format (configure_logging) for uvicorn's loggers too, and our
        # access line instead of uvicorn's.
        log_config=None,
        access_log=False,
        # Like upstream's aiohttp, take the client address and scheme from the socket, never
        # from X-Forwarded-* (uvicorn trusts them from 127.0.0.1 by default), and skip that
        # per-request header scan.
        proxy_headers=False,
        # On SIGTERM/SIGINT: stop accepting, let in-flight requests and streams finish for up
        # to this long, then cancel them (app.py closes a cut stream with its last chunk);
        # chat turns and state.db are closed last, in lifespan shutdown. uvicorn's annotation
        # says int, but it waits with asyncio.wait_for, which takes fractions (--shutdown-grace 0.5).
        timeout_graceful_shutdown=settings.shutdown_grace_seconds,  # type: ignore[arg-type]
        lifespan="on",
        # httptools with limits on the request head (cli/transport.py), refused as 0.19.0 does under
        # --upstream-quirks.
        http=protocol_for(HeadLimits(settings.max_request_line, settings.max_header_bytes, settings.max_headers,
                                     settings.max_head_bytes, settings.max_request_bytes),
                          upstream=app.context.behaviour.upstream_head_refusals),
    )


def serve(args: argparse.Namespace) -> int:
    """Check everything, bind the socket, then say where it serves and run uvicorn on that socket."""
    import uvicorn
    from sse_starlette.sse import AppStatus

    from hermes_server.app import create_app, state_db_preparer
    from hermes_server.cli.envfile import load_for, summary
    from hermes_server.cli.listen import ListenError, bind
    from hermes_server.cli.upstream import ignored_environment, ignored_line
    from hermes_server.domain.errors import SchemaMismatch
    from hermes_server.store.migrate import add_columns_now, check_existing

    loaded = load_for(args)  # before anything reads a setting: its values win over the environment's
    settings, no_auth = settings_from_args(args)
    fmt = settings.log_format
    configure_logging(settings.log_level, fmt)
    if loaded is not None:
        say(summary(loaded, {row.env for row in SERVE_OPTIONS if row.env}
                    | {row.env for dialect in KNOWN for row in dialect.options if row.env}), fmt)
    for note in (ignored_line(args), ignored_environment()):
        if note:
            say(note, fmt)

    # The socket first, then what else refuses the start, then what writes: a refused start (a port in
    # use, a refused schema or fixture, an unusable agent) writes no key file and opens no store.
    try:
        sock = bind(settings.host, settings.port)
    except ListenError as exc:
        say(str(exc), fmt, level="error", stream=sys.stderr)
        return 2

    def refuse(message: str) -> int:
        sock.close()
        say(message, fmt, level="error", stream=sys.stderr)
        return 2

    # What refuses the start comes first: a refused start leaves the home as it was (no key file).
    preparer = state_db_preparer(settings)
    try:
        to_add = check_existing(settings.db_path, preparer)
    except SchemaMismatch as exc:
        return refuse(str(exc))
    if to_add:  # only with --migrate-home: said, and done before anything is served
        say(f"--migrate-home: adding {', '.join(column.label for column in to_add)} to {settings.db_path} for the "
            f"{settings.hermes_version} profile (schema_version and all else unchanged)", fmt)
        try:
            add_columns_now(settings.db_path, preparer)
        except (SchemaMismatch, OSError, sqlite3.Error) as exc:
            return refuse(f"--migrate-home could not change {settings.db_path}: {exc}")
    if settings.fixture_path is not None:
        from hermes_server.testing.load import problems_of, start_report

        parts = FixtureParts.of(KNOWN, settings)
        rejected = problems_of(settings.fixture_path, settings.db_path, parts=parts)
        if rejected is not None:
            return refuse(start_report(settings.fixture_path, rejected))
    keyed = _announce_key(settings, no_auth)
    if isinstance(keyed, str):
        return refuse(keyed)
    settings, written = keyed
    if no_auth and not _is_loopback(settings.host):
        say(f"--no-auth on non-loopback address {settings.host}: anyone who can reach it can read and change "
            "sessions.", fmt, level="warning", stream=sys.stderr)
    if settings.fixture_api and settings.api_key is None and not _is_loopback(settings.host):
        say(f"--fixture-api without a key on {settings.host}: anyone who can reach it can reset the database.",
            fmt, level="warning", stream=sys.stderr)
    try:
        app = create_app(settings)
    except ValueError as exc:  # an unusable --agent configuration, found before any store opened a file
        if written is not None:  # the key this refused start generated: the home is left as it was
            written.unlink(missing_ok=True)
        return refuse(str(exc))
    if sys.stderr.isatty():
        _warn_unusable_home(settings)
    say(serving_line(settings), fmt)
    # sse-starlette would cut every open stream the moment SIGTERM arrives; a stream is an
    # in-flight request like any other, so it gets the same grace period (below) to finish.
    AppStatus.disable_automatic_graceful_drain()
    # uvicorn re-raises a SIGTERM it handled once its graceful shutdown is done, so the default
    # action would then kill the process (status -15) although nothing was lost; a clean stop
    # exits 0, as Ctrl-C does.
    signal.signal(signal.SIGTERM, _exit_after_shutdown)
    server = uvicorn.Server(uvicorn_config(app, settings))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    # Lifespan start-up failed (uvicorn logged why): not a clean stop.
    return 0 if server.started else 3
