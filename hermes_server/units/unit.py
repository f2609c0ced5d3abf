"""What one unit of a release supplies: the hooks the app calls once over the served units.

A Hermes release after 0.19.0 is 0.19.0 plus a set of units (domain/profiles.py), and each
deviation of docs/differences.md is a unit too (served unless `--upstream-quirks`: then its
0.19.0 counterpart is). A unit supplies, in one module, everything its change needs, each
through one hook that `app.py` calls once over the served units, the way Datasette calls
each plugin hook at one place (a unit leaves the hooks it does not need at their defaults):

- `routes`: routes it adds (placed by the release's route order), or, for a route another
  family serves, methods it replaces (the whole operation: the fact is declared once);
- `amendments`: more parameters, answers or flags on a method of a route it does not serve;
- `components`: the OpenAPI components its operations name, or replace (the document emits
  only those a served operation names); `refine`: those it derives from the components
  composed before it (an object schema another unit already extended, extended again);
- `errors`: error-map rows it swaps in, given the table composed so far;
- `columns`, `indexes`, `reading`: what state.db must have and which newer columns reads use;
- `behaviour`: the strategies handlers are given (`context.Behaviour`), chosen once here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.http.errors import ErrorMap, Handler
from hermes_server.http.routing import Amendment, Route
from hermes_server.openapi.build import Components
from hermes_server.store.schema import PLAIN, Column, Reading

ErrorRows = Mapping[type[BaseException], Handler]


def _no_rows(table: ErrorMap) -> ErrorRows:
    return MappingProxyType({})


def _nothing_refined(composed: Components) -> Components:
    return MappingProxyType({})


def _unchanged(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return behaviour


@dataclass(frozen=True, kw_only=True)
class Unit:
    """One change of a release, or one deviation, as it plugs into the app (see the module docstring)."""

    name: str
    routes: Callable[[], list[Route]] = list
    amendments: tuple[Amendment, ...] = ()
    components: Components = field(default_factory=dict)
    refine: Callable[[Components], Components] = _nothing_refined
    errors: Callable[[ErrorMap], ErrorRows] = _no_rows
    columns: tuple[Column, ...] = ()
    indexes: tuple[str, ...] = ()
    reading: Reading = PLAIN
    behaviour: Callable[[Behaviour, Settings], Behaviour] = _unchanged
