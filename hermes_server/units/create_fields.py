"""0.20.4's `POST /api/sessions` fields: the `source` a client names, normalised to a known
platform, and no stored model for the virtual alias (domain/create_fields.py)."""

from __future__ import annotations

from dataclasses import replace

from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.domain.create_fields import SOURCES, normalised_fields
from hermes_server.openapi.build import extended
from hermes_server.openapi.common import text, text_or_null
from hermes_server.openapi.sessions_schemas import SCHEMAS as SESSION_SCHEMAS
from hermes_server.units.unit import Unit


def _normalised(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, new_session=normalised_fields)


_MODEL = ("The session's model (a `provider::` prefix is dropped); null when empty, absent, not text, or the "
          "served model name.")

UNIT = Unit(name="create_fields", behaviour=_normalised, components={"schemas": {
    "CreateSession": extended(SESSION_SCHEMAS["CreateSession"], {
        "model": text_or_null(_MODEL),
        "model_id": text("Read as `model` when `model` is not non-empty text."),
        "source": text(f"The platform the session is from: one of {', '.join(f'`{name}`' for name in sorted(SOURCES))} "
                       "(any case, trimmed; `browser` is `hermes_browser`); anything else is stored as `api_server`."),
    }, required=False),
}})
