"""0.21.4's profile multiplexing (https://github.com/NousResearch/hermes-agent/pull/112854): a home
holding named profiles (`profiles/<name>/`) is served as one server, each profile under `/p/<name>/`
with its own home and key, the default profile without a prefix (cli/serve.py, multiplex.py)."""

from __future__ import annotations

from dataclasses import replace

from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.units.unit import Unit


def _multiplexing(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, multiplexes_profiles=True)


UNIT = Unit(name="multiplex_profiles", behaviour=_multiplexing)
