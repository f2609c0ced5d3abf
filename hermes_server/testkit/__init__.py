"""Test kit: run a real hermes-server from a test suite and drive its `/_fixture/` control API.

- `HermesServer`: start/stop a server subprocess (`with HermesServer() as srv: ...`).
- `FixtureClient`: the control API (reset, seed, faults, request journal, clock) and
  assertions over the journal, for any server started with `--fixture-api`.
- `Audit`, `Finding`: what `control.audit()` answers; `control.assert_clean()` fails on errors.
- `AsyncControlClient`: the same calls over `httpx.AsyncClient`, awaited.
- `HermesOptions`: what a server runs with (typed `serve` flags, plus any other as `flags`).
- `Fault`: typed builders for fault objects (`Fault.status("session_get", 503, times=1)`).
- `hermes_server.testkit.plugin`: the pytest plugin (fixtures `hermes_server`, `hermes`,
  `hermes_options`, `make_hermes`), registered through the package's `pytest11` entry point.

Nothing here is imported by the server, and nothing here imports the server: the kit talks
to it over HTTP only. Names are loaded on first use, so that pytest (which loads the plugin
in every run) does not pay for httpx unless a test asks for a server.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "HermesServer": "process", "HermesServerError": "process",
    "FixtureClient": "client", "FixtureError": "client", "LoadResult": "client", "InstalledFault": "client",
    "RequestRecord": "client", "ClockState": "client", "FixtureDocumentError": "client", "Outcome": "client",
    "DialectControl": "client", "AsyncControlClient": "aio", "HermesOptions": "options", "Fault": "faults",
    "free_port": "process", "Audit": "audit", "Finding": "audit",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
