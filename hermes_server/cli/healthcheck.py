"""`hermes-server healthcheck`: the probe a container HEALTHCHECK (or compose) runs, stdlib only.

Liveness (GET /health) says the process answers; readiness (--ready, GET /health/detailed)
says it can serve sessions: its state_db and gateway checks are ok. The disk check is
reported by the server but does not fail readiness (a disk 90 % full still serves).
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request

from hermes_server.cli.options import HOME, OptionError, env_text

# The checks of /health/detailed that must be ok for --ready.
READY_CHECKS = ("state_db", "gateway")


def _key() -> str | None:
    """API_SERVER_KEY, else the key a keyless start kept in HERMES_HOME (None: --no-auth)."""
    from hermes_server.cli.keyfile import KEY_FILE

    given = env_text("API_SERVER_KEY")
    if given:
        return given
    try:
        return (HOME.resolve(None) / KEY_FILE).read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError, OptionError):
        return None


def probe(url: str, *, ready: bool, timeout: float) -> str | None:
    """None when healthy, else one line saying what is wrong."""
    request = urllib.request.Request(url)
    key = _key() if ready else None
    if key:
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
    """Exit 0 when the server is live (or, with --ready, can serve sessions); stdlib only, for the image."""
    problem = probe(healthcheck_url(args.url, "/health/detailed" if args.ready else "/health"),
                    ready=args.ready, timeout=args.timeout)
    if problem:
        print(f"hermes-server healthcheck: {problem}", file=sys.stderr)
        return 1
    return 0
