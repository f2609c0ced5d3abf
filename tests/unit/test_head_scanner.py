"""The head scanner gives the same verdict however a head is cut into reads.

A client's bytes arrive in pieces of any size: a CR at the end of one read and its LF at the
start of the next, a name cut before its colon, leading blanks spread over reads. Each head
below, at and past each (small) limit, is fed whole and then cut at every position into two
reads and into reads of every size from 1 to 9 bytes: the refusal (which limit, what it
quotes) must not change. tests/api/test_head_limits.py checks the limits themselves on a
real server against 0.19.0's.
"""

from __future__ import annotations

import pytest

from hermes_server.cli.head_limits import HeadLimits, HeadScanner, Limit

LIMITS = HeadLimits(target=16, field=16, headers=3, head=120, body=1000)


def head(*lines: bytes, target: bytes = b"/t") -> bytes:
    return b"\r\n".join([b"GET " + target + b" HTTP/1.1", *lines]) + b"\r\n\r\n"


# (head, the limit it passes or None)
HEADS = [
    (head(b"Host: h", target=b"/" + b"t" * 15), None),
    (head(b"Host: h", target=b"/" + b"t" * 16), Limit.TARGET),
    (head(b"Host: h", b"X: " + b"v" * 16), None),
    (head(b"Host: h", b"X: " + b"v" * 17), Limit.VALUE),
    (head(b"Host: h", b"X:  \t " + b"v" * 14 + b"  "), None),
    (head(b"Host: h", b"X:  \t " + b"v" * 15 + b"  "), Limit.VALUE),
    (head(b"Host: h", b"X:"), None),
    (head(b"Host: " + b"h" * 12), None),
    (head(b"Host: " + b"h" * 13), Limit.FIRST_FIELD),
    (head(b"Host: h", b"N" * 12 + b": v"), None),
    (head(b"Host: h", b"N" * 13 + b": v"), Limit.NAME),
    (head(b"Host: h", b"A: 1", b"B: 2"), None),
    (head(b"Host: h", b"A: 1", b"B: 2", b"C: 3"), Limit.HEADERS),
    (head(b"Host: h", b"P:" + b" " * (120 - len(head(b"Host: h", b"P:v"))) + b"v"), None),  # the head limit
    (head(b"Host: h", b"P:" + b" " * (121 - len(head(b"Host: h", b"P:v"))) + b"v"), Limit.HEAD),
]


def verdict(pieces: list[bytes]) -> tuple[Limit | None, bytes]:
    scanner = HeadScanner(LIMITS)
    for piece in pieces:
        refusal = scanner.feed(piece)
        if refusal is not None:
            return refusal.limit, refusal.shown
    return None, b""


@pytest.mark.parametrize(("raw", "limit"), HEADS, ids=[repr(raw[:40]) for raw, _ in HEADS])
def test_the_verdict_does_not_depend_on_the_reads(raw: bytes, limit: Limit | None) -> None:
    whole = verdict([raw])
    assert whole[0] == limit
    for cut in range(1, len(raw)):
        assert verdict([raw[:cut], raw[cut:]]) == whole, cut
    for size in range(1, 10):
        assert verdict([raw[i:i + size] for i in range(0, len(raw), size)]) == whole, size
