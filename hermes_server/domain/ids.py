"""Session id selection and validation.

Create and fork pick an id the same way (`id`, then `session_id`, then a generated
`api_<unix seconds>_<8 hex>`), but validate it differently: create applies the full
path-safety and length rules, fork only upstream's lax checks (as its documentation says; docs/differences.md, D3).
"""

from __future__ import annotations

import random
import re
import unicodedata
import uuid
from collections.abc import Callable
from typing import Any

from hermes_server.domain.titles import has_lone_surrogate

MAX_SESSION_ID_LENGTH = 256

_CR_LF_NUL = re.compile(r"[\r\n\x00]")


def generate_session_id(now: float, hex8: Callable[[], str] | None = None) -> str:
    """Upstream's generated id form: `api_<int seconds>_<first 8 hex of a uuid4>`."""
    suffix = hex8() if hex8 else uuid.uuid4().hex[:8]
    return f"api_{int(now)}_{suffix}"


# Seed of the id generator in deterministic mode.
ID_SEED = 0


class IdSource:
    """Where generated ids get their random part: uuid4 as upstream, or a seeded generator.

    With `serve --deterministic` the same request sequence gives the same ids; the
    seeded generator restarts when the fixture control API resets the server.
    """

    def __init__(self, deterministic: bool = False) -> None:
        self.deterministic = deterministic
        self._rng: random.Random | None = None
        self.restart()

    def restart(self) -> None:
        self._rng = random.Random(ID_SEED) if self.deterministic else None
        # Run, message, response and completion ids draw from their own sequence, so
        # they never shift the session ids a deterministic test already relies on.
        self._tokens = random.Random(ID_SEED + 1) if self.deterministic else None

    async def reset(self) -> None:
        """`restart`, as a registered part of the server's state."""
        self.restart()

    def _hex8(self) -> str:
        assert self._rng is not None
        return f"{self._rng.getrandbits(32):08x}"

    def session_id(self, now: float) -> str:
        """A generated id in upstream's `api_<seconds>_<8 hex>` form."""
        return generate_session_id(now, self._hex8 if self._rng is not None else None)

    def hex(self, digits: int) -> str:
        """`digits` lowercase hex: of a uuid4 as upstream (`run_`, `msg_`, `resp_`, `chatcmpl-` ids), or seeded."""
        if self._tokens is None:
            return uuid.uuid4().hex[:digits] if digits <= 32 else (uuid.uuid4().hex + uuid.uuid4().hex)[:digits]
        return f"{self._tokens.getrandbits(4 * digits):0{digits}x}"

    def uuid(self) -> str:
        """A uuid4 in its dashed text form (a response chain's session id), or a seeded one."""
        if self._tokens is None:
            return str(uuid.uuid4())
        return str(uuid.UUID(int=self._tokens.getrandbits(128), version=4))

    def continuation_suffix(self) -> Callable[[], str] | None:
        """Where a compression continuation id gets its 6 hex: the seeded source, else None (random)."""
        if self._rng is None:
            return None
        return lambda: self._hex8()[:6]

    def job_id(self) -> str:
        """A cron job id: 12 hex digits, as upstream cuts from a uuid4."""
        if self._rng is None:
            return uuid.uuid4().hex[:12]
        return f"{self._rng.getrandbits(48):012x}"


def requested_id(body: dict[str, Any]) -> str | None:
    """The client's id choice: truthy `id`, else truthy `session_id`, as `str()` trimmed.

    Returns None when neither is truthy, meaning "generate one". Python truthiness
    and `str()` are the contract: `123` gives `"123"`, `true` gives `"True"`.
    """
    raw = body.get("id") or body.get("session_id")
    if not raw:
        return None
    return str(raw).strip()


def is_path_unsafe(session_id: str) -> bool:
    """`..`, `/`, `\\`, or a drive-like prefix (any Unicode letter followed by `:`)."""
    if ".." in session_id or "/" in session_id or "\\" in session_id:
        return True
    return len(session_id) >= 2 and session_id[0].isalpha() and session_id[1] == ":"


def has_cr_lf_nul(session_id: str) -> bool:
    """CR, LF or NUL: refused in every id, even by fork's lax rule and in headers."""
    return _CR_LF_NUL.search(session_id) is not None


def has_control_character(session_id: str) -> bool:
    """D3: any Unicode Cc character (C0, DEL, C1). Format characters (Cf) pass."""
    return any(unicodedata.category(ch) == "Cc" for ch in session_id)


def create_id_error(session_id: str, lax: bool = False) -> str | None:
    """The create-route rejection message for `session_id`, or None when acceptable.

    Order matters: the path/character check precedes the length check, so
    `".." + 257 * "x"` is "Invalid session ID", not "too long". `lax` is 0.19.0's rule
    (D3 off): of the control characters only CR, LF and NUL are refused.
    """
    if (
        not session_id
        or has_lone_surrogate(session_id)
        or (has_cr_lf_nul(session_id) if lax else has_control_character(session_id))
        or is_path_unsafe(session_id)
    ):
        return "Invalid session ID"
    if len(session_id) > MAX_SESSION_ID_LENGTH:
        return "Session ID too long"
    return None


def fork_id_error(session_id: str) -> str | None:
    """Fork's lax rule: only empty, CR/LF/NUL (and D6's lone surrogates) are refused."""
    if not session_id or has_cr_lf_nul(session_id) or has_lone_surrogate(session_id):
        return "Invalid session ID"
    return None
