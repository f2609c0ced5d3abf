"""`hermes-server` command line: `serve` (and the fixture commands that build on it).

Every option has an environment fallback (one table, `options.py`) so the same image
or Makefile target works in docker-compose and CI without flags.
"""

from __future__ import annotations

import argparse
import ipaddress
import signal
import sys
from pathlib import Path
from typing import Sequence

from hermes_server import UPSTREAM_VERSION, __version__
from hermes_server.config import Settings
from hermes_server.domain.keys import key_problem
from hermes_server.domain.wording import counted
from hermes_server.http.logs import configure_logging, say
from hermes_server.options import HOME, SERVE_OPTIONS, add_options, env_text, resolve_all

DESCRIPTION = f"""\
hermes-server: a local, faithful emulator of the Hermes Agent persistent-session API
(hermes-agent {UPSTREAM_VERSION}) over a Hermes-compatible state.db.

Point a connector or client at http://HOST:PORT with `Authorization: Bearer KEY`.
"""


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hermes-server", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"hermes-server {__version__} (emulates hermes-agent {UPSTREAM_VERSION})")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="run the API server",
        description="Run the session API server. Options fall back to the environment variables shown.",
    )
    add_options(serve, SERVE_OPTIONS)
    seed = commands.add_parser(
        "seed",
        help="load a fixture file into a state.db (a server may be running on it)",
        description="Merge the sessions and messages of a fixture file (docs/fixtures.md) into "
                    "HERMES_HOME/state.db in one transaction. An invalid fixture is rejected whole, "
                    "each problem named by its JSON path, and nothing is written. A `herm_run` part "
                    "(docs/herm-run.md) goes into HERMES_HOME/herm-run.db, checked with the rest.",
    )
    seed.add_argument("file", metavar="FILE", help="fixture file: JSON, or YAML (.yaml/.yml) when PyYAML is installed")
    add_options(seed, (HOME,))
    seed.add_argument("--replace", action="store_true",
                      help="empty every session table first (same transaction), so state.db holds exactly the "
                           "fixture (herm-run.db too, when the fixture has a herm_run part); refused when state.db "
                           "holds sessions hermes-server did not write (source other than api_server), unless --force")
    seed.add_argument("--force", action="store_true",
                      help="with --replace: replace even sessions hermes-server did not write (a real Hermes home's)")
    health = commands.add_parser(
        "healthcheck",
        help="exit 0 when a server answers GET /health (the container's HEALTHCHECK)",
        description="Probe a running server's /health; exit 0 when it answers 200, 1 otherwise.",
    )
    health.add_argument("--url", default=None,
                        help="base URL to probe (default http://127.0.0.1:PORT, PORT from env API_SERVER_PORT or 8642; "
                             "a specific API_SERVER_HOST is used instead of 127.0.0.1)")
    health.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for the answer (default 3)")
    health.add_argument("--ready", action="store_true",
                        help="readiness instead of liveness: GET /health/detailed and exit 1 unless its state_db and "
                             "gateway checks are ok (a home that cannot hold state.db fails it); the key is "
                             "API_SERVER_KEY, else the one kept in HERMES_HOME")
    return parser


def settings_from_args(args: argparse.Namespace) -> tuple[Settings, bool]:
    """Resolve flags and environment into Settings, and whether --no-auth is on; exits on bad values."""
    values = resolve_all(args, SERVE_OPTIONS)
    no_auth = values.pop("no_auth")
    key = values.pop("api_key")
    if no_auth:
        key = None
    elif key is not None:
        problem = key_problem(key)
        if problem:
            raise SystemExit(f"hermes-server: refusing to start: {problem}")
        key = key.strip()
    herm_run_key = values["herm_run_key"]
    if herm_run_key is not None:
        problem = key_problem(herm_run_key)
        if problem:
            raise SystemExit(f"hermes-server: refusing to start: --herm-run-key: {problem}")
        values["herm_run_key"] = herm_run_key.strip()
    return Settings(api_key=key, **values), no_auth


def _exit_after_shutdown(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _announce_key(settings: Settings, no_auth: bool) -> Settings | str:
    """Settings with the key to require (the kept one when none was given), or a refusal."""
    from hermes_server.keyfile import KeyFileError, stored_key

    fmt = settings.log_format
    if settings.api_key is not None or no_auth:
        return settings
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
    return Settings(**{**settings.__dict__, "api_key": kept.key})


def serving_line(settings: Settings) -> str:
    """Where the server listens, and that it answers as 0.19.0 does when `--upstream-quirks` is on
    (someone reading its answers must know they are seeing 0.19.0's failures on purpose)."""
    line = f"serving http://{settings.host}:{settings.port} over {settings.db_path}"
    if settings.upstream_quirks:
        line += (f"; upstream quirks ON: answering as hermes-agent {UPSTREAM_VERSION} does, text/plain 500s "
                 "included, wherever docs/differences.md lists a deviation")
    return line


def serve(args: argparse.Namespace) -> int:
    """Check everything, bind the socket, then say where it serves and run uvicorn on that socket."""
    import uvicorn
    from sse_starlette.sse import AppStatus

    from hermes_server.app import create_app
    from hermes_server.domain.errors import SchemaMismatch
    from hermes_server.http.heads import HeadLimits, protocol_for
    from hermes_server.listen import ListenError, bind
    from hermes_server.store.migrate import check_existing

    settings, no_auth = settings_from_args(args)
    fmt = settings.log_format
    configure_logging(settings.log_level, fmt)

    def refuse(message: str) -> int:
        say(message, fmt, level="error", stream=sys.stderr)
        return 2

    keyed = _announce_key(settings, no_auth)
    if isinstance(keyed, str):
        return refuse(keyed)
    settings = keyed
    if no_auth and not _is_loopback(settings.host):
        say(f"--no-auth on non-loopback address {settings.host}: anyone who can reach it can read and change "
            "sessions.", fmt, level="warning", stream=sys.stderr)
    try:
        check_existing(settings.db_path)
    except SchemaMismatch as exc:
        return refuse(str(exc))
    if settings.fixture_path is not None:
        from hermes_server.testing.load import problems_of, start_report

        rejected = problems_of(settings.fixture_path, settings.db_path, herm_run=settings.herm_run)
        if rejected is not None:
            return refuse(start_report(settings.fixture_path, rejected))
    if settings.fixture_api and settings.api_key is None and not _is_loopback(settings.host):
        say(f"--fixture-api without a key on {settings.host}: anyone who can reach it can reset the database.",
            fmt, level="warning", stream=sys.stderr)
    try:
        app = create_app(settings)
    except ValueError as exc:  # an unusable --agent configuration
        return refuse(str(exc))
    try:
        sock = bind(settings.host, settings.port)
    except ListenError as exc:
        return refuse(str(exc))
    say(serving_line(settings), fmt)
    # sse-starlette would cut every open stream the moment SIGTERM arrives; a stream is an
    # in-flight request like any other, so it gets the same grace period (below) to finish.
    AppStatus.disable_automatic_graceful_drain()
    # uvicorn re-raises a SIGTERM it handled once its graceful shutdown is done, so the default
    # action would then kill the process (status -15) although nothing was lost; a clean stop
    # exits 0, as Ctrl-C does.
    signal.signal(signal.SIGTERM, _exit_after_shutdown)
    config = uvicorn.Config(
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
        # chat turns and state.db are closed last, in lifespan shutdown.
        timeout_graceful_shutdown=settings.shutdown_grace_seconds,
        lifespan="on",
        # httptools with byte limits on the request head (http/heads.py).
        http=protocol_for(HeadLimits(settings.max_request_line, settings.max_header_bytes,
                                     settings.max_head_bytes, settings.max_request_bytes)),
    )
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    # Lifespan start-up failed (uvicorn logged why): not a clean stop.
    return 0 if server.started else 3


def seed(args: argparse.Namespace) -> int:
    """`hermes-server seed FILE`: exit 0 loaded, 1 rejected (problems on stderr), 2 unusable state.db."""
    import asyncio
    import time

    from hermes_server.domain.errors import DatabaseUnavailable, DocumentError, SchemaMismatch
    from hermes_server.store.migrate import check_existing
    from hermes_server.testing.load import read_document, replace_refusal, seed_home
    from hermes_server.testing.model import parse_fixture

    home = HOME.resolve(args.home)
    db_path = Settings(home=home).db_path
    path = Path(args.file).expanduser()
    try:
        check_existing(db_path)
        document = read_document(path)
        fixture = parse_fixture(document, time.time(), defer=True)
        refusal = replace_refusal(db_path, fixture) if args.replace and not args.force and not fixture.problems else None
        if refusal:
            print(f"hermes-server: {refusal}", file=sys.stderr)
            return 2
        result = asyncio.run(seed_home(home, document, time.time(), replace=args.replace))
    except DocumentError as exc:
        print(f"hermes-server: {exc.report(f'fixture {path}')}", file=sys.stderr)
        return 1
    except (SchemaMismatch, DatabaseUnavailable) as exc:
        print(f"hermes-server: {exc}", file=sys.stderr)
        return 2
    print(f"hermes-server: loaded {path} into {db_path}: {counted(result.sessions_written, 'session')}, "
          f"{counted(result.messages_written, 'message')} "
          f"(state.db now holds {counted(result.sessions_total, 'session')})")
    if result.herm_run is not None:
        herm = result.herm_run
        print(f"hermes-server: herm.run: {counted(herm['agents_written'], 'agent')}, "
              f"{counted(herm['sessions_written'], 'session')} into herm-run.db "
              f"(now {counted(herm['sessions_total'], 'session')})")
    return 0


def healthcheck_url(url: str | None, path: str = "/health") -> str:
    """Where `healthcheck` probes: --url, else this container's own API_SERVER_HOST/PORT."""
    if url:
        return url.rstrip("/") + path
    host = env_text("API_SERVER_HOST") or "127.0.0.1"
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{env_text('API_SERVER_PORT') or '8642'}{path}"


def healthcheck(args: argparse.Namespace) -> int:
    """Exit 0 when the server is live (or, with --ready, can serve sessions); stdlib only, for the image."""
    from hermes_server.healthcheck import probe

    problem = probe(healthcheck_url(args.url, "/health/detailed" if args.ready else "/health"),
                    ready=args.ready, timeout=args.timeout)
    if problem:
        print(f"hermes-server healthcheck: {problem}", file=sys.stderr)
        return 1
    return 0


def refuse_unknown(parser: argparse.ArgumentParser, command: str | None, unknown: list[str]) -> None:
    """Exit 2 naming the unknown arguments in the usage of their command, with the closest option
    of that command for each misspelt one (`--prot` -> `--port`; Python 3.11's argparse suggests none)."""
    import difflib

    target = next((action.choices.get(command, parser) for action in parser._actions  # noqa: SLF001 - no public API
                   if command and isinstance(action, argparse._SubParsersAction)), parser)  # noqa: SLF001
    known = [flag for action in target._actions for flag in action.option_strings]  # noqa: SLF001
    hints = [f"{flag}: did you mean {close[0]}?" for flag in (argument.split("=", 1)[0] for argument in unknown)
             if flag.startswith("-") and (close := difflib.get_close_matches(flag, known, n=1, cutoff=0.6))]
    target.error(f"unrecognized arguments: {' '.join(unknown)}" + (f" ({'; '.join(hints)})" if hints else ""))


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        refuse_unknown(parser, args.command, unknown)
    if args.command is None:  # a bare `hermes-server` is a usage error, not a success
        parser.print_help(sys.stderr)
        print("hermes-server: error: name a command, e.g. `hermes-server serve`", file=sys.stderr)
        return 2
    if args.command == "serve":
        try:
            return serve(args)
        except SystemExit as refused:  # a refused option value: one line, the usage-error status
            if not isinstance(refused.code, str):
                raise
            # In JSON when that was asked for, even if another option was the bad one.
            fmt = "json" if (args.log_format or env_text("HERMES_SERVER_LOG_FORMAT")) == "json" else "text"
            say(refused.code.removeprefix("hermes-server: "), fmt, level="error", stream=sys.stderr)
            return 2
    if args.command == "healthcheck":
        return healthcheck(args)
    if args.command == "seed":
        return seed(args)
    parser.print_help(sys.stderr)
    return 2
