"""The smoke check of the two-endpoints example: each named Hermes answers with the one key, and each
keeps its own sessions (stdlib only).

    python smoke.py --agent hermes-a=http://hermes-a:8642 --agent hermes-b=http://hermes-b:8642

Exit 0 when every endpoint created, listed and deleted its own session and saw none of the others'.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.request

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def call(method: str, url: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {os.environ['API_SERVER_KEY']}",
                                              "Content-Type": "application/json"})
    with OPENER.open(request, timeout=30) as response:
        raw = response.read()
    return json.loads(raw) if raw else {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", action="append", required=True, metavar="NAME=URL")
    agents = dict(item.split("=", 1) for item in parser.parse_args().agent)
    for name, url in agents.items():
        call("POST", f"{url}/api/sessions", {"id": f"smoke-{name}", "title": f"smoke {name}"})
    for name, url in agents.items():
        ids = sorted(session["id"] for session in call("GET", f"{url}/api/sessions")["data"])
        if ids != [f"smoke-{name}"]:
            print(f"{name}: expected only smoke-{name}, found {ids}", file=sys.stderr)
            return 1
        call("DELETE", f"{url}/api/sessions/smoke-{name}")
        print(f"ok  {name} at {url}", flush=True)
    print(f"smoke check passed: {', '.join(agents)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
