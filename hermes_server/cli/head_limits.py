"""What a request head may hold, counted the way hermes-agent 0.19.0 counts it, and the refusals.

0.19.0 serves with aiohttp 3.14.1, whose C parser (`aiohttp/_http_parser.pyx` of the installed
package, default `max_line_size`, `max_field_size` 8190 and `max_headers` 128) refuses with a
400 what passes these limits; measured on the real server, they are:

- the request target (path and query; not the method or the version): `target` bytes;
- a header value, from its first byte that is not a space or tab to the end of its line
  (blanks at its end count): `field` bytes; for the first header line, its name and value
  together;
- a header name together with the name of the header line before it: `field` bytes (aiohttp
  adds the previous name, not yet filed away, to the new one when the name arrives in one
  read; kept, so that exactly the heads 0.19.0 takes pass);
- header lines, Host included: `headers`.

0.19.0 has no bound on the whole head (a value's leading blanks are skipped however many),
so `head` is hermes-server's own; by default it is above anything a head can hold under the
other limits without such padding. The numbers and the answers are in docs/differences.md
("Request heads").

`HeadScanner` counts the bytes of a head before the HTTP parser sees them (so nothing past
a limit is ever buffered), and `answer` writes the refusal: the standard error envelope, or
0.19.0's own text/plain answer when the server answers as 0.19.0 (`--upstream-quirks`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum

from uvicorn.protocols.http.httptools_impl import STATUS_LINE

# How many bytes of what passed a limit 0.19.0 quotes in its answer.
SHOWN = 100
_NOT_BLANK = re.compile(rb"[^ \t]")
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}")


@dataclass(frozen=True)
class HeadLimits:
    """The limits of one request, each as the module docstring counts it, and of its body."""

    target: int
    field: int
    headers: int
    head: int
    body: int


class Limit(Enum):
    """Which limit a head passed."""

    TARGET = "target"
    VALUE = "value"
    FIRST_FIELD = "first field"
    NAME = "name"
    HEADERS = "headers"
    HEAD = "head"


@dataclass(frozen=True)
class Refusal:
    """A head past `limit` (of `size`): `shown` is the start of what passed it, `header` its header's name."""

    limit: Limit
    size: int
    shown: bytes = b""
    header: bytes = b""

    def envelope(self) -> tuple[str, str]:
        """hermes-server's code and message: which limit, and the header concerned when it has a plain name."""
        header = f"'{self.header.decode()}'" if _TOKEN.fullmatch(self.header) else "field"
        return {
            Limit.TARGET: ("request_target_too_long", f"Request target (path and query) longer than {self.size} bytes."),
            Limit.VALUE: ("request_header_too_large", f"Request header {header} too large: its value passes "
                                                      f"{self.size} bytes."),
            Limit.FIRST_FIELD: ("request_header_too_large", f"Request header {header} too large: the first header's "
                                                            f"name and value together pass {self.size} bytes."),
            Limit.NAME: ("request_header_too_large", f"Request header name too large: with the name before it, it "
                                                     f"passes {self.size} bytes."),
            Limit.HEADERS: ("too_many_headers", f"More than {self.size} request headers."),
            Limit.HEAD: ("request_head_too_large", f"Request head longer than {self.size} bytes."),
        }[self.limit]

    def upstream_text(self) -> str:
        """0.19.0's text/plain body for this refusal (aiohttp's message, quoting what passed the limit)."""
        if self.limit is Limit.HEADERS:
            return "Too many headers received"
        quoted = self.shown[:SHOWN] + b"..."
        shown = repr(bytearray(quoted)) if self.limit is Limit.TARGET else repr(quoted)
        return f"Got more than {self.size} bytes when reading: {shown}."


def answer(refusal: Refusal, upstream: bool) -> bytes:
    """The whole answer to a refused head: 400 with the envelope, or with 0.19.0's status line and text
    when `upstream` (the head limit, which 0.19.0 does not have, keeps the envelope)."""
    if upstream and refusal.limit is not Limit.HEAD:
        body = refusal.upstream_text().encode()
        return b"".join([b"HTTP/1.0 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n",
                         b"content-length: %d\r\n\r\n" % len(body), body])
    return envelope_answer(400, *refusal.envelope())


def envelope_answer(status: int, code: str, message: str) -> bytes:
    """An answer written before the app: `status` with the standard error envelope, and the close."""
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": None,
                                 "code": code}}).encode()
    return b"".join([STATUS_LINE[status], b"content-type: application/json; charset=utf-8\r\n",
                     b"content-length: %d\r\n" % len(body), b"connection: close\r\n\r\n", body])


class _Part(Enum):
    """Where in its line the scan is."""

    METHOD = 0
    TARGET = 1
    VERSION = 2
    NAME = 3
    BLANKS = 4
    VALUE = 5


class HeadScanner:
    """Counts the bytes of one request head after the other, as they arrive, against `limits`.

    A usual head (all of it in one read, shorter than the smallest byte limit) costs one
    `bytes.find`, and when it is longer than 4 bytes per allowed header line one
    `bytes.count` too; a longer head is scanned line by line, keeping only counts and the
    first bytes of the current part (what 0.19.0 quotes).
    """

    def __init__(self, limits: HeadLimits) -> None:
        self.limits = limits
        # A head shorter than this passes no byte limit: the target and each field lie in it.
        self._quick = min(limits.target, limits.field, limits.head)
        # A head shorter than this holds at most `headers` lines ("a:\r\n" is the shortest).
        self._few = 4 * (limits.headers + 1)
        self.start()

    def start(self) -> None:
        """A new head begins (the connection's first, or the next one after a message)."""
        self.bytes = 0  # of this head, read so far
        self._lines = 0  # finished non-blank lines: 0 while in the request line
        self._line = 0  # bytes of the current, unfinished line
        self._part = _Part.METHOD
        self._size = 0  # bytes of the current target, name or value
        self._shown = bytearray()  # its first SHOWN bytes
        self._cr = False  # whether its last byte read is a CR (the line's end, not the value's)
        self._name = self._previous = 0  # bytes of this header line's name, of the one before
        self._name_shown = self._previous_shown = b""

    def feed(self, data: bytes) -> Refusal | None:
        """Count `data` into the head; the refusal when it passes a limit."""
        limits = self.limits
        if self.bytes == 0:
            end = data.find(b"\r\n\r\n")
            if 0 <= end and end + 4 <= self._quick and (end < self._few or
                                                         data.count(b"\n", 0, end) <= limits.headers):
                self.bytes = end + 4  # should the parser not end the head here, scan on
                return None  # the whole head, and short: the parser takes it from here
        start, size = 0, len(data)
        while start < size:
            newline = data.find(b"\n", start)
            stop = size if newline < 0 else newline
            self._line += stop - start
            self.bytes += stop - start + (newline >= 0)
            refusal = self._request_line(data, start, stop) if self._lines == 0 else self._field(data, start, stop)
            if refusal is None and self.bytes > limits.head:
                refusal = Refusal(Limit.HEAD, limits.head)
            if refusal is not None or newline < 0:
                return refusal
            blank = self._line <= 1  # "\r\n" (a lone "x\n" is refused by the parser)
            self._line = 0
            start = newline + 1
            if not blank:
                self._lines += 1
                if self._lines > 1:
                    self._previous, self._previous_shown = self._name, self._name_shown
                    if self._lines - 1 > limits.headers:
                        return Refusal(Limit.HEADERS, limits.headers)
                self._begin(_Part.NAME)
            elif self._lines:
                return None  # the end of the head: what follows is body (or the next request)
        return None

    def _begin(self, part: _Part) -> None:
        self._part, self._size, self._shown, self._cr = part, 0, bytearray(), False

    def _grow(self, data: bytes, start: int, stop: int) -> None:
        """Count data[start:stop] into the current part."""
        if len(self._shown) < SHOWN:
            self._shown += data[start:min(stop, start + SHOWN - len(self._shown))]
        self._size += stop - start
        if stop > start:
            self._cr = data[stop - 1] == 0x0D

    def _request_line(self, data: bytes, start: int, stop: int) -> Refusal | None:
        """The request line: only its target (between the first two spaces) counts."""
        if self._part is _Part.METHOD:
            space = data.find(b" ", start, stop)
            if space < 0:
                return None
            self._begin(_Part.TARGET)
            start = space + 1
        if self._part is not _Part.TARGET:
            return None
        space = data.find(b" ", start, stop)
        self._grow(data, start, stop if space < 0 else space)
        if self._size > self.limits.target:
            return Refusal(Limit.TARGET, self.limits.target, bytes(self._shown))
        if space >= 0:
            self._part = _Part.VERSION
        return None

    def _field(self, data: bytes, start: int, stop: int) -> Refusal | None:
        """A header line: its name (with the previous one's), then its value past the leading blanks."""
        limit = self.limits.field
        if self._part is _Part.NAME:
            colon = data.find(b":", start, stop)
            self._grow(data, start, stop if colon < 0 else colon)
            if self._previous + self._size > limit:
                return Refusal(Limit.NAME, limit, self._previous_shown + self._shown)
            if colon < 0:
                return None
            self._name, self._name_shown = self._size, bytes(self._shown)
            self._begin(_Part.BLANKS)
            start = colon + 1
        if self._part is _Part.BLANKS:
            found = _NOT_BLANK.search(data, start, stop)
            if found is None:
                return None
            self._begin(_Part.VALUE)
            start = found.start()
        self._grow(data, start, stop)
        first, value = self._lines == 1, self._size - self._cr  # a CR that ends the line is not the value's
        if value + (self._name if first else 0) > limit:
            return Refusal(Limit.FIRST_FIELD if first else Limit.VALUE, limit, bytes(self._shown[:value]),
                           self._name_shown)
        return None
