"""The testkit and the server it drives, held to each other.

The kit (hermes_server/testkit/) imports nothing of the server, so its fault builders and
its option names are a second copy of the server's fault kinds (testing/fault_kinds.py)
and `serve` options (cli/options.py and each dialect's rows). A kind or an option added on
one side only fails here until the other side (or this file, for a `serve` option the kit
leaves to `flags`) says what it makes of it.
"""

from __future__ import annotations

import argparse
import inspect
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from hermes_server.app import build_routes
from hermes_server.cli.main import build_parser
from hermes_server.cli.options import SERVE_OPTIONS, Option
from hermes_server.dialects import KNOWN
from hermes_server.domain.profiles import PROFILES
from hermes_server.testing.fault_kinds import KINDS
from hermes_server.testing.faults import COMMON_KEYS, FaultRegistry
from hermes_server.testkit import plugin
from hermes_server.testkit.faults import COMMON_FIELDS, Fault
from hermes_server.testkit.options import HermesOptions
from hermes_server.testkit.process import HermesServer

# -- fault kinds and the `Fault` builders ---------------------------------------

BUILDERS = sorted(name for name, member in vars(Fault).items() if isinstance(member, classmethod))
# A valid value for each field a builder takes (every kind's own keys are among them).
SAMPLES: dict[str, Any] = {
    "status": 503, "message": "injected", "code": "injected_fault", "type": "server_error", "param": "p",
    "headers": {"X-Injected": "1"}, "retry_after": 2, "when": "after", "latency_ms": 20, "duration_ms": 20,
    "after_step": 2, "after_events": 1,
}


def _own_fields(builder: str) -> set[str]:
    return set(inspect.signature(getattr(Fault, builder)).parameters) - {"route", "common"}


def test_one_builder_per_fault_kind() -> None:
    assert BUILDERS == sorted(KINDS)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_builder_takes_exactly_its_kinds_fields(kind: str) -> None:
    assert _own_fields(kind) == set(KINDS[kind].keys)


def test_the_fields_every_kind_takes_are_the_same() -> None:
    assert {"kind", "route", *COMMON_FIELDS} == set(COMMON_KEYS)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_what_a_builder_makes_the_server_accepts(kind: str) -> None:
    registry = FaultRegistry(build_routes())
    required = {name for name, p in inspect.signature(getattr(Fault, kind)).parameters.items()
                if p.default is inspect.Parameter.empty and p.kind is not p.VAR_KEYWORD}
    smallest = getattr(Fault, kind)(**{name: None if name == "route" else SAMPLES[name] for name in required})
    every = getattr(Fault, kind)(**{name: SAMPLES[name] for name in _own_fields(kind)}, route=None, id="every",
                                 times=2)
    (parsed_smallest, parsed_every) = registry.parse({"faults": [dict(smallest), dict(every)]})
    assert parsed_smallest.kind is parsed_every.kind is KINDS[kind]
    assert {key: parsed_every.spec[key] for key in _own_fields(kind)} == {key: SAMPLES[key] for key in _own_fields(kind)}


# -- `serve` options and the kit's names ----------------------------------------

ROWS: tuple[Option, ...] = SERVE_OPTIONS + tuple(row for dialect in KNOWN for row in dialect.options)
# The `serve` options the kit has no name of its own for: a test passes them in `flags`
# (`HermesOptions(flags=("--model-name", "x"))`, `hermes_serve_args`).
THROUGH_FLAGS = {
    "model_name", "cors_origins", "migrate_home", "log_level", "log_format", "turn_drain_seconds", "read_cache_mb",
    "agent_base_url", "agent_model", "agent_api_key", "keepalive_seconds", "max_concurrent_runs",
    "max_request_line", "max_header_bytes", "max_headers", "max_head_bytes",
    "herm_run", "herm_run_key", "herm_run_allowance", "herm_run_window_seconds",
}
# What the kit has that is no `serve` option: how it launches and waits, and flags as given.
KIT_ONLY_OPTIONS = {"flags", "startup_timeout", "env"}
KIT_ONLY_KEYWORDS = KIT_ONLY_OPTIONS | {"options", "extra_args", "log_path", "python"}


def _given(args: list[str]) -> dict[str, Any]:
    """The value of each `serve` option `args` give, parsed as the server parses it (a flag the
    server does not know is a SystemExit here)."""
    parsed: argparse.Namespace = build_parser().parse_args(["serve", *args])
    return {row.dest: row.resolve(getattr(parsed, row.dest)) for row in ROWS
            if getattr(parsed, row.dest) not in (None, False)}


def _option_samples(tmp_path: Path) -> dict[str, Any]:
    script = tmp_path / "script.json"
    script.write_text("[]")
    fixture = tmp_path / "fixture.json"
    fixture.write_text("{}")
    return {"agent": "echo", "hermes_version": sorted(PROFILES)[-1], "deterministic": True, "fixture": fixture,
            "upstream_quirks": True, "agent_script": script, "agent_delay": 0.5, "compress_after_messages": 3}


def test_every_kit_option_is_a_serve_option_with_the_value_given(tmp_path: Path) -> None:
    samples = _option_samples(tmp_path)
    assert {f.name for f in fields(HermesOptions)} - KIT_ONLY_OPTIONS == set(samples)
    for name, value in samples.items():
        reached = _given(HermesOptions(**{name: value}).serve_args())
        assert value in reached.values(), f"HermesOptions.{name}={value!r} gives {reached}"


def _launch_reached(tmp_path: Path) -> dict[str, Any]:
    keyed = HermesServer(home=tmp_path, host="127.0.0.2", port=1234, api_key="k" * 32, fixture_api=True,
                         shutdown_grace=2.5)
    keyless = HermesServer(home=tmp_path, port=1234, auth=False)
    reached: dict[str, Any] = {}
    for server in (keyed, keyless):
        command = server._command()  # noqa: SLF001 - what the launcher would run, without running it
        reached.update(_given(command[command.index("serve") + 1:]))
    return reached


def test_every_launch_keyword_is_a_serve_option(tmp_path: Path) -> None:
    keywords = set(inspect.signature(HermesServer.__init__).parameters) - {"self"}
    options = {f.name for f in fields(HermesOptions)}
    assert options <= keywords  # every option is also a keyword of the launcher
    launch = keywords - options - KIT_ONLY_KEYWORDS
    assert launch == {"api_key", "auth", "fixture_api", "home", "port", "host", "shutdown_grace"}
    assert set(_launch_reached(tmp_path)) == {"home", "host", "port", "api_key", "no_auth", "fixture_api",
                                               "shutdown_grace_seconds"}


def test_every_serve_option_is_a_kit_name_or_left_to_flags(tmp_path: Path) -> None:
    by_kit = set(_launch_reached(tmp_path))
    for name, value in _option_samples(tmp_path).items():
        by_kit |= set(_given(HermesOptions(**{name: value}).serve_args()))
    served = {row.dest for row in ROWS}
    assert not by_kit & THROUGH_FLAGS, "a kit name now reaches it: drop it from THROUGH_FLAGS"
    assert served - by_kit == THROUGH_FLAGS, (
        f"serve options the kit does not reach: {sorted(served - by_kit - THROUGH_FLAGS)}; "
        f"listed here but not served: {sorted(THROUGH_FLAGS - served)}")


def test_the_plugins_version_option_names_every_release() -> None:
    source = inspect.getsource(plugin.pytest_addoption)
    assert all(version in source for version in PROFILES), "the --hermes-version help lists every release"
