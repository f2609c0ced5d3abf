"""API-key policy: what upstream refuses to start with, and how we generate one."""

from __future__ import annotations

import secrets

MIN_KEY_LENGTH = 16

# Values people paste from templates; upstream refuses them whatever their length.
PLACEHOLDER_KEYS = frozenset({
    "*", "**", "***", "changeme", "your_api_key", "your_api_key_here", "your-api-key",
    "placeholder", "example", "dummy", "null", "none",
})


def key_problem(key: str) -> str | None:
    """Why `key` would be refused by upstream, or None when it is acceptable."""
    cleaned = key.strip()
    if cleaned.lower() in PLACEHOLDER_KEYS:
        return f"API key {cleaned!r} is a placeholder; use a real secret (e.g. `openssl rand -hex 32`)."
    if len(cleaned) < MIN_KEY_LENGTH:
        return (
            f"API key is {len(cleaned)} characters; upstream refuses keys shorter than "
            f"{MIN_KEY_LENGTH}. Use a longer secret (e.g. `openssl rand -hex 32`)."
        )
    return None


def generate_key() -> str:
    """A strong random key, printable and shell-safe."""
    return "hs-" + secrets.token_urlsafe(32)
