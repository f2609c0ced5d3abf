"""The listening socket, bound before anything says "serving", refused in one line when it cannot be.

uvicorn binds inside its event loop and reports a taken port as an errno after the
start-up lines were printed. Binding here first means the "serving http://…" line is
only ever printed for a socket that exists, and a refusal says what to do instead.
"""

from __future__ import annotations

import errno
import socket


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
                          "use --host (or API_SERVER_HOST) with 127.0.0.1, 0.0.0.0 or ::") from None
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


def _refusal(host: str, port: int, exc: OSError) -> str:
    where = _where(host, port)
    if exc.errno == errno.EADDRINUSE:
        # "address already in use" is what the test kit looks for to retry on another port.
        return (f"cannot listen on {where}: address already in use by another process; stop it, "
                "or choose another port with --port (or API_SERVER_PORT)")
    if exc.errno == errno.EADDRNOTAVAIL:
        return (f"cannot listen on {where}: {host} is not an address of this machine; "
                "use --host (or API_SERVER_HOST) with 127.0.0.1, 0.0.0.0 or one of its addresses")
    if exc.errno == errno.EACCES:
        return (f"cannot listen on {where}: permission denied (ports below 1024 need privileges); "
                "choose a port above 1023 with --port (or API_SERVER_PORT)")
    return f"cannot listen on {where}: {exc.strerror or exc}"
