"""0.20.4's `POST /api/sessions` fields: the `source` a client names, normalised to a known
platform, and no stored model for the virtual alias (domain/create_fields.py)."""

from __future__ import annotations

from dataclasses import replace

from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.domain.create_fields import normalised_fields
from hermes_server.units.unit import Unit


def _normalised(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, new_session=normalised_fields)


UNIT = Unit(name="create_fields", behaviour=_normalised)
