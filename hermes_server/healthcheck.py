"""`hermes-server healthcheck`: the probe a container HEALTHCHECK (or compose) runs, stdlib only.

Liveness (GET /health) says the process answers; readiness (--ready, GET /health/detailed)
says it can serve sessions: its state_db and gateway checks are ok. The disk check is
reported by the server but does not fail readiness (a disk 90 % full still serves).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from hermes_server.options import HOME, env_text

# The checks of /health/detailed that must be ok for --ready.
READY_CHECKS = ("state_db", "gateway")


def _key() -> str | None:
    """API_SERVER_KEY, else the key a keyless start kept in HERMES_HOME (None: --no-auth)."""
    from hermes_server.keyfile import KEY_FILE

    given = env_text("API_SERVER_KEY")
    if given:
        return given
    try:
        return (HOME.resolve(None) / KEY_FILE).read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError, SystemExit):
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
