"""Mask credential-looking substrings in error text before it leaves the server.

Upstream runs every error message through its secret redactor, so
`GET /api/sessions/sk-ant-api03-abc…xyz` answers `Session not found: sk-ant...wxyz`.
We mask the widely used vendor token formats the same way: first 6 and last 4
characters kept, `...` between; tokens shorter than 18 characters become `***`.
"""

from __future__ import annotations

import re

# Well-known public token shapes (vendor prefix + body). Kept deliberately broad:
# a false positive only shortens an error message.
_TOKEN_SHAPES = (
    r"sk-[A-Za-z0-9_-]{10,}",
    r"sk_(?:live|test)_[A-Za-z0-9]{10,}",
    r"rk_live_[A-Za-z0-9]{10,}",
    r"sk_[A-Za-z0-9_]{10,}",
    r"gh[pousr]_[A-Za-z0-9]{10,}",
    r"github_pat_[A-Za-z0-9_]{10,}",
    r"xox[baprs]-[A-Za-z0-9-]{10,}",
    r"xapp-\d+-[A-Za-z0-9-]{10,}",
    r"AIza[A-Za-z0-9_-]{30,}",
    r"AKIA[A-Z0-9]{16}",
    r"hf_[A-Za-z0-9]{10,}",
    r"gsk_[A-Za-z0-9]{10,}",
    r"pplx-[A-Za-z0-9]{10,}",
    r"npm_[A-Za-z0-9]{10,}",
    r"pypi-[A-Za-z0-9_-]{10,}",
    r"xai-[A-Za-z0-9]{30,}",
    r"SG\.[A-Za-z0-9_-]{10,}",
    r"r8_[A-Za-z0-9]{10,}",
    r"tvly-[A-Za-z0-9]{10,}",
)
_TOKEN_RE = re.compile(r"(?<![A-Za-z0-9_-])(" + "|".join(_TOKEN_SHAPES) + r")(?![A-Za-z0-9_-])")
_BEARER_RE = re.compile(r"(Bearer\s+)([A-Za-z0-9._~+/=-]{8,})")


def mask_token(token: str) -> str:
    """Keep a recognisable head and tail of a long token, hide the rest."""
    if len(token) < 18:
        return "***"
    return f"{token[:6]}...{token[-4:]}"


def redact(text: str) -> str:
    """Return `text` with credential-shaped substrings masked."""
    text = _TOKEN_RE.sub(lambda m: mask_token(m.group(1)), text)
    return _BEARER_RE.sub(lambda m: m.group(1) + mask_token(m.group(2)), text)
