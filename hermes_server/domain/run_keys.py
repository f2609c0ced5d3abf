"""0.21's durable `Idempotency-Key` on `POST /v1/runs`: the key's rules, the request's
fingerprint, the caller's scope, and when a kept key may be forgotten.

Upstream's rules (`gateway/platforms/api_server_runs.py` `_handle_runs`,
`api_server_run_idempotency.py`): the header, stripped, is the key; empty means none; a
key of more than 255 characters or with any character outside visible ASCII (33-126)
is a 400. The fingerprint is the SHA-256 of the JSON body and the session-key header
together, so a retry with the same body and header replays and any other body conflicts.
Keys live in a scope, the SHA-256 of the profile and the server's key (never the key
itself), so a file kept under another key is not readable with this one. A record is
forgotten only once its run is settled and a day has passed since its last update.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

MAX_KEY_LENGTH = 255
# A day, as upstream's RunIdempotencyStore.RETENTION_SECONDS.
RETENTION_SECONDS = 24 * 60 * 60
# The statuses after which a run changes no more: the three of 0.19.0, and a run a restart cut off.
SETTLED = frozenset({"completed", "failed", "cancelled", "interrupted"})
INVALID_KEY_MESSAGE = "Idempotency-Key must be 1-255 visible ASCII characters"
CONFLICT_MESSAGE = "Idempotency-Key was already used with a different request payload"
# What a run a restart cut off reads (upstream's `_durable_run_status`).
INTERRUPTED_ERROR = "The gateway restarted before this run settled."
# What a run a shutdown cut off reads from 0.21.4 on (https://github.com/NousResearch/hermes-agent/pull/114774).
SHUTDOWN_ERROR = "Gateway shutdown interrupted the run."
# The scope's parts when the server has no key (upstream's name for a keyless listener).
DEFAULT_PROFILE = "default"
_KEYLESS = "unauthenticated-test-listener"


def valid_key(key: str) -> bool:
    """Whether a stripped, non-empty header value is a key upstream accepts."""
    return len(key) <= MAX_KEY_LENGTH and all(33 <= ord(ch) <= 126 for ch in key)


def _digest(text: str) -> str:
    # surrogatepass: a body with a lone surrogate still has a fingerprint (upstream would crash on it).
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def fingerprint(body: Any, session_key: str | None) -> str:
    """The request's fingerprint: what a retry must repeat to replay rather than conflict."""
    return _digest(json.dumps({"body": body, "gateway_session_key": session_key or ""},
                              sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def scope(api_key: str | None, profile: str = DEFAULT_PROFILE) -> str:
    """The namespace a key lives in: the profile (upstream's `default`, or the name a multiplexing
    0.21.6 server serves under `/p/<name>/`) and that profile's key, hashed."""
    return _digest("\0".join((profile, api_key or _KEYLESS)))


def interrupted(status: dict[str, Any], now: float) -> dict[str, Any]:
    """A persisted status whose owner process is gone, as upstream reads it after a restart."""
    return {**status, "status": "interrupted", "error": INTERRUPTED_ERROR, "last_event": "run.interrupted",
            "updated_at": now}
