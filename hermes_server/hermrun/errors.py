"""The herm.run dialect's typed refusals: each carries its HTTP status, error type and message.

Rules and storage raise them; `envelope.error_response` is the only code that turns one
into a response, as `{"error": {"type", "message", "param"}}`.
"""

from __future__ import annotations

from typing import Any


class HermRunError(Exception):
    """A refusal a herm.run client sees; subclasses fix the status and the type."""

    status = 400
    type = "validation_error"

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param

    @property
    def headers(self) -> dict[str, str]:
        """Extra response headers (only the 429 has one)."""
        return {}

    def body(self) -> dict[str, Any]:
        return {"error": {"type": self.type, "message": self.message, "param": self.param}}


class ValidationFailed(HermRunError):
    """400: the body or query is invalid; `param` names the field."""


class Unauthorized(HermRunError):
    status = 401
    type = "unauthorized"


class NotFound(HermRunError):
    """404: the agent or the session does not exist."""

    status = 404
    type = "not_found"


class InvalidState(HermRunError):
    """409: the session's status does not allow the operation."""

    status = 409
    type = "invalid_state"


class PayloadTooLarge(HermRunError):
    status = 413
    type = "request_too_large"


class RateLimited(HermRunError):
    """429: the agent's per-subject conversation allowance is spent for this window."""

    status = 429
    type = "rate_limited"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class Unavailable(HermRunError):
    """503: herm-run.db cannot be opened right now (the next request tries again)."""

    status = 503
    type = "unavailable"
