"""The pure rules of 0.21's durable Idempotency-Key (hermes_server/domain/run_keys.py), against
upstream's `_handle_runs` (hermes-after-0.19.md §1.4, V3 read_file id 66455427443)."""

from __future__ import annotations

import hashlib
import json

from hermes_server.domain import run_keys


def test_key_rules() -> None:
    assert run_keys.valid_key("a") and run_keys.valid_key("!" * 255) and run_keys.valid_key("~")
    assert run_keys.valid_key("")  # empty: no key at all (the caller treats it so)
    for bad in ("a" * 256, "a b", "\x7f", "caf\u00e9", "tab\t", "\x00"):
        assert not run_keys.valid_key(bad), bad


def test_fingerprint_is_upstreams_digest() -> None:
    body = {"input": "hi", "model": "m"}
    expected = hashlib.sha256(json.dumps({"body": body, "gateway_session_key": ""}, sort_keys=True,
                                         separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()
    assert run_keys.fingerprint(body, None) == expected
    assert run_keys.fingerprint({"model": "m", "input": "hi"}, None) == expected
    assert run_keys.fingerprint(body, "memory-1") != expected
    assert len(run_keys.fingerprint({"input": "\ud800"}, None)) == 64  # a lone surrogate still digests


def test_scope_hides_the_key() -> None:
    scope = run_keys.scope("secret-key-0123456789")
    assert scope == hashlib.sha256(b"default\0secret-key-0123456789").hexdigest()
    assert "secret" not in scope and scope != run_keys.scope(None)


def test_interrupted_keeps_the_order_and_adds_the_fields() -> None:
    status = {"created_at": 1.0, "status": "running", "updated_at": 2.0}
    assert run_keys.interrupted(status, 5.0) == {
        "created_at": 1.0, "status": "interrupted", "updated_at": 5.0,
        "error": "The gateway restarted before this run settled.", "last_event": "run.interrupted"}
    assert list(run_keys.interrupted(status, 5.0)) == ["created_at", "status", "updated_at", "error", "last_event"]
