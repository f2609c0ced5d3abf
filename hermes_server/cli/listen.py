"""The listening socket, bound before anything says "serving", refused in one line when it cannot be.

uvicorn binds inside its event loop and reports a taken port as an errno after the
start-up lines were printed. Binding here first means the "serving http://…" line is
only ever printed for a socket that exists, and a refusal says what to do instead, in the
words of the command that was run: `make serve` sets HERMES_SERVER_LAUNCHER to itself, so its
users are told `make serve PORT=…`, where those of `hermes-server serve` are told `--port`.
"""

from __future__ import annotations

import errno
import os
import socket

# The command that started `hermes-server serve` for its user, when it was not typed directly
# (the Makefile's serve target sets "make serve"); it takes the options as VARIABLE=value.
LAUNCHER = "HERMES_SERVER_LAUNCHER"


class ListenError(Exception):
    """Why the server cannot listen where it was asked to, and what to do about it (one line)."""


def _where(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port (not yet listening; uvicorn calls listen), or ListenError."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError):
        raise ListenError(f"cannot listen on {host!r}: not an address of this machine nor a name it resolves; "
                          f"use {_option('host')} with 127.0.0.1, 0.0.0.0 or ::") from None
    family, kind, proto, _, address = found[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ListenError(_refusal(host, port, exc)) from None
    sock.set_inheritable(True)
    return sock


def _option(name: str) -> str:
    """How the user at hand sets --NAME: `make serve NAME=…` under make, else the option or its variable."""
    launcher = os.environ.get(LAUNCHER, "").strip()
    if launcher:
        return f"{launcher} {name.upper()}=…"
    return f"--{name} (or API_SERVER_{name.upper()})"


def _refusal(host: str, port: int, exc: OSError) -> str:
    where = _where(host, port)
    if exc.errno == errno.EADDRINUSE:
        # "address already in use" is what the test kit looks for to retry on another port.
        return (f"cannot listen on {where}: address already in use by another process; stop it, "
                f"or choose another port with {_option('port')}")
    if exc.errno == errno.EADDRNOTAVAIL:
        return (f"cannot listen on {where}: {host} is not an address of this machine; "
                f"use {_option('host')} with 127.0.0.1, 0.0.0.0 or one of its addresses")
    if exc.errno == errno.EACCES:
        return (f"cannot listen on {where}: permission denied (ports below 1024 need privileges); "
                f"choose a port above 1023 with {_option('port')}")
    return f"cannot listen on {where}: {exc.strerror or exc}"
