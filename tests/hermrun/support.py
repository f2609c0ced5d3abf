"""Start hermes-server with the herm.run dialect for the HTTP tests, and drive it.

`start_herm_run` runs the real server (`serve --herm-run --fixture-api`, through
tests/support/server.py: uvicorn on a loopback ephemeral port, a real home) and gives a
herm.run client (`x-api-key`) beside the control client (Bearer).
"""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from hermes_server.hermrun.store import HermRunStore
from hermes_server.store.db import Database
from tests.support.server import KEY, RunningServer, start_server

__all__ = ["KEY", "HermRunServer", "error", "start_herm_run", "store_at"]


def store_at(home: Path) -> HermRunStore:
    """A herm-run.db store in `home`, its database built as `seed` builds it (one reader)."""
    return HermRunStore(home, partial(Database, reader_threads=1))


@dataclass
class HermRunServer:
    """A running server, a herm.run client (x-api-key) and a control client (Bearer)."""

    server: RunningServer
    args: tuple[str, ...]
    api_key_header: str | None = None
    client: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        api_key = self.api_key_header or self.key
        self.client = httpx.Client(base_url=self.url, headers={"x-api-key": api_key} if api_key else {}, timeout=30)

    @property
    def key(self) -> str | None:
        return self.server.key

    @property
    def control(self) -> httpx.Client:
        return self.server.client

    @property
    def home(self) -> Path:
        return self.server.home

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def db_path(self) -> Path:
        return self.home / "herm-run.db"

    def log(self) -> str:
        return self.server.log()

    # -- test control ------------------------------------------------------

    def clock(self, **body: float) -> dict[str, Any]:
        """POST /_fixture/clock: `now`, `advance` and/or `step` (the clock becomes manual)."""
        r = self.control.post("/_fixture/clock", json=body)
        assert r.status_code == 200, r.text
        return r.json()

    def seed(self, herm_run: dict[str, Any]) -> httpx.Response:
        return self.control.post("/_fixture/seed", json={"herm_run": herm_run})

    def reset(self) -> dict[str, Any]:
        r = self.control.post("/_fixture/reset", json={})
        assert r.status_code == 200, r.text
        return r.json()

    def set_state(self, session_id: str, **body: Any) -> httpx.Response:
        """Give a session a status (`running`, `waiting_on_human` …) and/or a usage snapshot."""
        return self.control.post(f"/_fixture/herm-run/sessions/{session_id}", json=body)

    # -- API -----------------------------------------------------------------

    def create(self, **body: Any) -> dict[str, Any]:
        """POST /v1/sessions, which must answer 201; the session."""
        r = self.client.post("/v1/sessions", json=body)
        assert r.status_code == 201, r.text
        return r.json()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.client.close()
        return self.server.stop(sig)


def start_herm_run(home: Path, *extra: str, key: str | None = KEY, fixture: dict[str, Any] | None = None,
                   api_key_header: str | None = None) -> HermRunServer:
    """Start `serve --herm-run --fixture-api` over `home` (created if needed) and wait until it answers."""
    home.mkdir(parents=True, exist_ok=True)
    args = ["--herm-run", "--fixture-api", *extra]
    if fixture is not None:
        path = home.parent / f"fixture-{home.name}.json"
        path.write_text(json.dumps(fixture))
        args += ["--fixture", str(path)]
    return HermRunServer(start_server(home, *args, key=key), tuple(args), api_key_header)


def error(type_: str, message: str, param: str | None = None) -> dict[str, Any]:
    """herm.run's error envelope, for equality assertions."""
    return {"error": {"type": type_, "message": message, "param": param}}
