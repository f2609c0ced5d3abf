"""0.21's `/p/<profile>/` on a server that does not multiplex
(https://github.com/NousResearch/hermes-agent/pull/92871): the prefix is honoured when it names the
server's own profile (`default`); a route under any other profile's prefix answers 404
`{"error": "Unknown or unconfigured profile"}` instead of the default profile's answer (0.19 and
0.20 ignore the prefix). A multiplexing 0.21.6 server widens the set to the profiles it serves."""

from __future__ import annotations

from dataclasses import replace

from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.units.unit import Unit


def _own_profile_only(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, served_profiles=frozenset({settings.profile}))


UNIT = Unit(name="profile_prefix_closed", behaviour=_own_profile_only)
