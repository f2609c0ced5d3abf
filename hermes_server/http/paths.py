"""Percent-decoding of request paths exactly as upstream's aiohttp/yarl stack does it.

aiohttp matches routes against yarl's `URL.path_safe`: every `%XX` escape that is
part of valid UTF-8 is decoded, except that `%2F` (`/`) and `%25` (`%`) stay
encoded so they cannot split or re-escape a segment; escapes that are not valid
UTF-8 (`%FF`, a lone `%C3`, overlongs, surrogates) are kept as written. A path
parameter is then taken from one `/`-separated segment of that text and only
`%2F` and `%25` are decoded in it. So `/api/sessions/a%2Fb` addresses the id
`a/b`, `/api/%73essions` is the list route, and `/api/sessions/%FF` looks up the
literal id `%FF`. Python's `unquote` would give U+FFFD instead.
"""

from __future__ import annotations

import re

_ESCAPE_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
# Decoded ASCII characters that path_safe leaves escaped.
_KEPT_ESCAPED = {"/": "%2F", "%": "%25"}


def _decode_run(run: str) -> str:
    escapes = [run[i:i + 3] for i in range(0, len(run), 3)]
    decoded = bytes(int(escape[1:], 16) for escape in escapes).decode("utf-8", "surrogateescape")
    out: list[str] = []
    position = 0  # index into `escapes` (one per byte)
    for ch in decoded:
        if "\udc80" <= ch <= "\udcff":
            out.append(escapes[position])  # an invalid byte: keep its escape as the client wrote it
            position += 1
        else:
            out.append(_KEPT_ESCAPED.get(ch, ch))
            position += len(ch.encode("utf-8"))
    return "".join(out)


def path_safe(raw_path: str) -> str:
    """The path as yarl's `path_safe` gives it (see the module docstring)."""
    if "%" not in raw_path:
        return raw_path
    return _ESCAPE_RUN.sub(lambda m: _decode_run(m.group(0)), raw_path)


def segment_value(segment: str) -> str:
    """A path parameter from one `path_safe` segment: only `%2F` and `%25` are decoded."""
    if "%" not in segment:
        return segment
    return segment.replace("%2F", "/").replace("%25", "%")
