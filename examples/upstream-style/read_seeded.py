"""The client of the upstream-style example: list the seeded home's sessions with the home's key (stdlib only).

Exit 0 when both seeded sessions and the seeded transcript are served, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request

BASE = os.environ.get("HERMES_URL", "http://hermes:8642").rstrip("/")
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get(path: str) -> dict:
    request = urllib.request.Request(BASE + path, headers={"Authorization": f"Bearer {os.environ['API_SERVER_KEY']}"})
    with OPENER.open(request, timeout=30) as response:
        return json.loads(response.read())


def main() -> int:
    ids = sorted(session["id"] for session in get("/api/sessions")["data"])
    print(f"sessions: {', '.join(ids)}", flush=True)
    messages = get("/api/sessions/seeded-alpha/messages")["data"]
    if ids != ["seeded-alpha", "seeded-beta"] or [m["content"] for m in messages][:1] != ["hello from the seeded home"]:
        print("the seeded rows are not what the server serves", file=sys.stderr)
        return 1
    print("seeded rows read", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
