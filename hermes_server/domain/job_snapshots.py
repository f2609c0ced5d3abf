"""The provider and model a new cron job snapshots, as 0.19.0 takes them from `config.yaml`.

0.19.0 records, on every job created without its own provider and model (all the API
creates), what the home's configuration would pick at that moment; a Hermes ticker
firing the job later skips it when the configuration has moved to another provider or
model since (its guard against unintended spend). So the strings must be the ones
0.19.0 writes for the same home, or a real gateway on that home would either skip jobs
created here or never guard them.

The model is 0.19.0's rule exactly: the `model` section of `config.yaml` is either the
model's name or a mapping whose `default` (else `model`) names it, `${VAR}` references
expanded from the environment, blank meaning none. The provider 0.19.0 resolves through
its credentials (environment, auth files, auto-detection), which hermes-server does not
have; it snapshots the provider the section names, and none when it names none or
`auto` (docs/differences.md, "Cron jobs").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_ENV_REFERENCE = re.compile(r"\${([^}]+)}")


def expanded(value: Any, env: Mapping[str, str]) -> Any:
    """`value` with each `${VAR}` in its strings replaced from `env`; unknown ones kept verbatim."""
    if isinstance(value, str):
        return _ENV_REFERENCE.sub(lambda match: env.get(match.group(1), match.group(0)), value)
    if isinstance(value, dict):
        return {key: expanded(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [expanded(item, env) for item in value]
    return value


def _text(value: Any) -> str | None:
    return (value.strip() or None) if isinstance(value, str) else None


def snapshots(model_section: Any, env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(`provider_snapshot`, `model_snapshot`) for the `model` section of `config.yaml`
    (None when the file is missing or unreadable)."""
    section = expanded(model_section, env)
    if isinstance(section, str):
        return None, _text(section)
    if not isinstance(section, dict):
        return None, None
    default = section.get("default") or section.get("model")
    provider = _text(section.get("provider"))
    provider = provider.lower() if provider else None
    return (None if provider == "auto" else provider), _text(default)
