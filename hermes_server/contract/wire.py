"""One request on a fresh connection, with the bytes exactly as a scenario gives them.

Both servers of a comparison must see the same wire: repeated headers, bodies announced by
`Content-Length` but never sent, chunked bodies, header values that are not UTF-8. An
HTTP client library would normalise some of that away, so this is `http.client` driven by hand.
"""

from __future__ import annotations

import http.client
import itertools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

# A body: bytes as they are, a callable giving the chunks of a chunked body, or none.
Body = bytes | Callable[[], Iterable[bytes]] | None


@dataclass(frozen=True)
class Endpoint:
    """Where a server listens: `http://host:port` (a path prefix is kept and put before every path)."""

    host: str
    port: int
    prefix: str = ""
    tls: bool = False

    @classmethod
    def parse(cls, url: str) -> Endpoint:
        """`http://HOST:PORT[/PREFIX]`; raises ValueError for anything else."""
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        if parts.query or parts.fragment:
            raise ValueError(f"a base URL has no query or fragment: {url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.hostname, port, parts.path.rstrip("/"), parts.scheme == "https")

    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}{self.prefix}"


def local(port: int) -> Endpoint:
    return Endpoint("127.0.0.1", port)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]  # lower-cased names; a repeated header's values joined by ", "
    body: bytes

    def json_object(self) -> dict[str, Any]:
        """The body when it is a JSON object, else an empty one."""
        try:
            data = json.loads(self.body)
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}


def exchange(where: Endpoint, method: str, path: str, body: Body = None,
             headers: Iterable[tuple[str, str | bytes]] = (), *, announce_only: bool = False,
             timeout: float = 120) -> Answer:
    """One request on a new connection, sent exactly as given.

    `headers` go out in order (a name may repeat). Bytes go with a Content-Length (unless
    `headers` has one) and, with `announce_only`, are never sent; a callable gives the
    chunks of a `Transfer-Encoding: chunked` body. A server that answers before reading
    the whole body may close the socket under us: what it answered is still read.
    """
    kind = http.client.HTTPSConnection if where.tls else http.client.HTTPConnection
    conn = kind(where.host, where.port, timeout=timeout)
    try:
        conn.putrequest(method, where.prefix + path, skip_host=False, skip_accept_encoding=True)
        headers = list(headers)
        for name, value in headers:
            conn.putheader(name, value)
        chunks: Iterable[bytes] = ()
        if callable(body):
            conn.putheader("Transfer-Encoding", "chunked")
            chunks = (b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in itertools.chain(body(), [b""]))
        elif body is not None:
            if not any(name.lower() == "content-length" for name, _ in headers):
                conn.putheader("Content-Length", str(len(body)))
            chunks = () if announce_only else (body,)
        conn.endheaders()
        try:
            for chunk in chunks:
                conn.send(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        resp = conn.getresponse()
        names = {name.lower() for name, _ in resp.getheaders()}
        return Answer(resp.status, {name: resp.getheader(name) or "" for name in names}, resp.read())
    finally:
        conn.close()
