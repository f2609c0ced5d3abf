"""`hermes-server healthcheck`: the probe a container HEALTHCHECK (or compose) runs, stdlib only.

Liveness (GET /health) says the process answers; readiness (--ready, GET /health/detailed)
says it can serve sessions: its state_db and gateway checks are ok. The disk check is
reported by the server but does not fail readiness (a disk 90 % full still serves).
It reads HERMES_HOME/.env as the server does (its API_SERVER_KEY, HOST and PORT), so a
key kept only there passes the image's own check.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path

from hermes_server.cli.options import HOME, Option, OptionError, env_text, text

# The checks of /health/detailed that must be ok for --ready.
READY_CHECKS = ("state_db", "gateway")

# The key --ready sends, found as `serve` finds the key it requires.
PROBE_KEY = Option("api_key", "--api-key", "API_SERVER_KEY", None, text,
                   "the bearer key --ready sends (the server's --api-key)", metavar="KEY",
                   shown_default="the key a keyless serve kept in HERMES_HOME")
# Here --home only locates the server's kept key (nothing in it is opened or written).
KEY_HOME = replace(HOME, help="the home of the server asked, read only for the key a keyless serve kept there "
                              "(hermes-server.key), when no --api-key or API_SERVER_KEY is given")
PROBE_OPTIONS = (PROBE_KEY, KEY_HOME)


def probe_key(args: argparse.Namespace) -> tuple[str | None, str]:
    """The key --ready sends, and where it was found (never the key itself: the line is logged
    by container runtimes), or None and where it was looked for."""
    from hermes_server.cli.keyfile import KEY_FILE

    given = PROBE_KEY.source(args.api_key)
    if given:
        key = PROBE_KEY.resolve(args.api_key).strip()
        return (key or None), f"the key from {given}"
    try:
        path: Path | None = HOME.resolve(args.home) / KEY_FILE
    except OptionError:
        path = None
    where = f"no key file at {path}" if path else "no usable --home"
    try:
        key = path.read_text(encoding="utf-8").strip() if path else ""
    except (OSError, UnicodeDecodeError):
        key = ""
    if key:
        return key, f"the key kept in {path}"
    return None, f"no key: none given (--api-key, API_SERVER_KEY) and {where}"


def probe(url: str, *, ready: bool, timeout: float, key: str | None = None) -> str | None:
    """None when healthy, else one line saying what is wrong."""
    request = urllib.request.Request(url)
    if ready and key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        # No proxy: the probe is always for this host, whatever HTTP_PROXY says.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=timeout) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as exc:
        return f"{url}: status {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return f"{url}: {exc}"
    if status != 200:
        return f"{url}: status {status}"
    if not ready:
        return None
    try:
        checks = json.loads(body)["readiness"]["checks"]
        failing = [f"{name} {checks[name]['status']}" + (f" ({checks[name]['detail']})" if checks[name].get("detail")
                                                          else "")
                   for name in READY_CHECKS if checks[name]["status"] != "ok"]
    except (ValueError, KeyError, TypeError):
        return f"{url}: not a readiness report"
    return f"{url}: not ready: {', '.join(failing)}" if failing else None


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
    """Exit 0 when the server is live (or, with --ready, can serve sessions); stdlib only, for the image.
    A failed --ready says which key it sent (a 401 alone does not say that it found none)."""
    from hermes_server.cli.envfile import load_for

    try:
        load_for(args)  # the home's .env, as the server read it: its host, port and key
    except OptionError as refused:
        print(f"hermes-server healthcheck: {refused}", file=sys.stderr)
        return 1
    key, where = probe_key(args) if args.ready else (None, "")
    problem = probe(healthcheck_url(args.url, "/health/detailed" if args.ready else "/health"),
                    ready=args.ready, timeout=args.timeout, key=key)
    if problem:
        print(f"hermes-server healthcheck: {problem}" + (f" (sent {where})" if args.ready else ""), file=sys.stderr)
        return 1
    return 0
