"""The version wing as data: every profile's units, what each supplies, and the document and route
table they compose (hermes_server/units/, app.py `Release`). No server: each check builds the release
in process.

A unit is checked against what it says it changes: the routes it adds or answers are served by
every release that has it, in that release's order; its amendments land on served methods; every
component it names is described; its error rows are what the composed table answers; its
strategies differ from 0.19.0's. A release's route table lists every route of its order and nothing
else, every advertised operation has a place in its endpoint order, and every `$ref` of its
document resolves.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from hermes_server.app import Release
from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.domain.profiles import HERMES_0_19, PROFILES, Addition
from hermes_server.domain.quirks import Quirk, Quirks
from hermes_server.http.errors import Unauthorized
from hermes_server.openapi.document import build_document
from hermes_server.units import QUIRK_UNITS, RELEASE_UNITS, units_of
from hermes_server.units.unit import Unit
from tests.support.openapi import resolved

VERSIONS = sorted(PROFILES)
# What each unit of a release is expected to supply (a unit that supplies none of these is dead).
SUPPLIES = ("routes", "amendments", "components", "refine", "errors", "columns", "indexes", "reading",
            "journal", "behaviour")


def _supplied(unit: Unit, settings: Settings) -> set[str]:
    """Which hooks `unit` fills (a hook left at its default supplies nothing)."""
    default = Unit(name="nothing")
    found = {name for name in ("amendments", "columns", "indexes", "reading", "journal") if getattr(unit, name) != getattr(
        default, name)}
    if unit.routes():
        found.add("routes")
    if unit.components:
        found.add("components")
    if unit.refine is not default.refine:
        found.add("refine")
    if unit.errors(Release.of(HERMES_0_19).errors()):
        found.add("errors")
    behaviour = unit.behaviour(Behaviour(), settings)
    asyncio.run(behaviour.run_keys.close())  # a store it opened (runs_idempotency.db) is closed again
    if behaviour != Behaviour():
        found.add("behaviour")
    return found


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(_refs(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(value) for value in node))
    return set()


def test_every_change_and_every_deviation_is_one_unit() -> None:
    assert set(RELEASE_UNITS) == set(Addition)
    assert set(QUIRK_UNITS) == set(Quirk)
    units = [*RELEASE_UNITS.values(), *QUIRK_UNITS.values()]
    assert len({id(unit) for unit in units}) == len(units)  # no unit stands for two names
    assert len({unit.name for unit in units}) == len(units)


def test_every_profile_lists_its_units_in_a_composing_order() -> None:
    """The profiles' units, as the research page lists each release's changes (docs/versions.md)."""
    assert [unit.name for unit in units_of(PROFILES["0.19.0"], Quirks())] == []
    newer = [unit.name for unit in units_of(PROFILES["0.20.4"], Quirks())]
    assert newer == ["gateway_auth", "model_options", "session_model_lock", "run_steer", "session_stream_runs",
                     "message_paging", "chat_runtime", "create_fields", "session_flags", "prompt_store",
                     "activity_clock", "journal_mode_config"]
    assert [unit.name for unit in units_of(PROFILES["0.21.2"], Quirks())] == [
        *newer, "run_stop_settled", "run_idempotency", "unserved_0_21", "journal_mode_told", "profile_prefix_closed"]
    # 0.21.6 is 0.21.2 and the API server's changes merged for 0.21.4 (docs/versions.md).
    assert [unit.name for unit in units_of(PROFILES["0.21.6"], Quirks())] == [
        *(unit.name for unit in units_of(PROFILES["0.21.2"], Quirks())), "session_stream_output",
        "shutdown_interrupts_runs", "multiplex_profiles"]
    for profile in PROFILES.values():
        assert len(set(profile.units)) == len(profile.units), profile.version
        with_quirks = units_of(profile, Quirks.upstream(True))
        assert with_quirks[len(profile.units):] == tuple(QUIRK_UNITS[quirk] for quirk in Quirk)


@pytest.mark.parametrize("unit", [*RELEASE_UNITS.values(), *QUIRK_UNITS.values()], ids=lambda unit: unit.name)
def test_every_unit_supplies_something(unit: Unit, tmp_path: Path) -> None:
    assert _supplied(unit, Settings(home=tmp_path)) & set(SUPPLIES), unit.name


@pytest.mark.parametrize("version", VERSIONS)
def test_each_units_routes_amendments_components_and_rows_are_served(version: str, tmp_path: Path) -> None:
    profile = PROFILES[version]
    release = Release.of(profile)
    served = {route.name: route for route in release.routes}
    document = build_document(release.routes, release.components)
    components = document["components"]
    errors = release.errors()
    for unit in release.units:
        for route in unit.routes():
            assert route.name in served, (unit.name, route.name)
            for method, given in route.methods.items():
                # The unit's method is the one served (nothing later replaced it).
                assert served[route.name].methods[method].endpoint is given.endpoint, (unit.name, route.name)
        for change in unit.amendments:
            op = served[change.route].methods[change.method].operation
            assert set(change.responses.items()) <= set(op.responses.items()), (unit.name, change)
            assert set(change.query) <= set(op.query) and set(change.headers) <= set(op.headers)
        for section, entries in unit.components.items():
            for name in entries:
                # Described in the composed components; in the document when a served operation names it.
                assert name in release.components[section], (unit.name, section, name)
        for error in unit.errors(errors):
            assert error in errors.handlers, (unit.name, error)
    for ref in _refs(document):
        section, name = ref.removeprefix("#/components/").split("/", 1)
        assert name in components[section], (version, ref)


def test_the_401_unit_answers_every_newer_release_and_nothing_else() -> None:
    for version, profile in PROFILES.items():
        answer = Release.of(profile).errors().render(Unauthorized())
        assert answer is not None
        code = b"gateway_auth_failed" if Addition.GATEWAY_AUTH in profile.units else b"invalid_api_key"
        assert code in answer.body, version


@pytest.mark.parametrize("version", VERSIONS)
def test_the_route_table_is_the_releases_order_exactly(version: str) -> None:
    """Every route a release serves has its place in the release's order, and every route of the order is
    served: a route added to a family or unit without one (or a stale order) fails here."""
    profile = PROFILES[version]
    names = [route.name for route in Release.of(profile).routes]
    assert names == list(profile.route_order)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_advertised_operation_has_its_place_in_the_endpoint_order(version: str) -> None:
    profile = PROFILES[version]
    advertised = [route.name for route in Release.of(profile).routes
                  if any(method.operation.capability for method in route.methods.values())]
    assert sorted(advertised) == sorted(profile.endpoint_order)


@pytest.mark.parametrize("quirks", [Quirks(), Quirks.upstream(True)], ids=["own", "upstream"])
@pytest.mark.parametrize("version", VERSIONS)
def test_every_reference_of_every_document_resolves(version: str, quirks: Quirks) -> None:
    """The document of each release (with its own answers and with 0.19.0's) names only components it
    emits, and emits only components it names."""
    release = Release.of(PROFILES[version], quirks)
    document = build_document(release.routes, release.components)
    resolved(document["paths"], document)  # a reference to no component is a KeyError
    refs = _refs(document)
    named = {ref.removeprefix("#/components/") for ref in refs}
    schemes = {"securitySchemes/" + scheme for item in document["paths"].values() for op in item.values()
               for requirement in op["security"] for scheme in requirement} | {"securitySchemes/bearer"}
    emitted = {f"{section}/{name}" for section, entries in document["components"].items() for name in entries}
    assert emitted == named | schemes


def test_two_units_answering_one_method_refuse_to_compose() -> None:
    """A method is answered by its family or by one unit: a second unit answering it is a mistake of the
    release's data, refused when the app is built, not settled by the order of the units."""
    stop = RELEASE_UNITS[Addition.RUN_STOP_SETTLED]
    twice = Release(PROFILES["0.21.2"], (stop, Unit(name="another stop", routes=stop.routes)),
                    Release.of(HERMES_0_19).families)
    with pytest.raises(ValueError, match=re.escape("both answer POST /v1/runs/{run_id}/stop")):
        twice.routes  # noqa: B018 - composing is the check


def test_0_21_6_serves_and_documents_what_0_21_2_does() -> None:
    """Its changes are behaviours, not routes or answers' shapes: the same route table, capabilities
    and document as 0.21.2."""
    older, newer = Release.of(PROFILES["0.21.2"]), Release.of(PROFILES["0.21.6"])
    assert [route.name for route in newer.routes] == [route.name for route in older.routes]
    assert build_document(newer.routes, newer.components) == build_document(older.routes, older.components)
    assert (PROFILES["0.21.6"].features, PROFILES["0.21.6"].endpoint_order) == (
        PROFILES["0.21.2"].features, PROFILES["0.21.2"].endpoint_order)
