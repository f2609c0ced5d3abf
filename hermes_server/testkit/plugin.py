"""The pytest plugin: a real hermes-server for a test suite, in one line.

Loaded through the package's `pytest11` entry point (disable with `-p no:hermes_server`):

- `hermes_server` (session): one server per test process (so one per pytest-xdist worker),
  a `HermesServer` with `base_url`, `api_key`, `headers`, `home`, `control` and `http`;
- `hermes` (function): the same server, reset before the test (`POST /_fixture/reset`),
  then seeded and broken as the test's markers say;
- `hermes_options` (session): the `HermesOptions` the session's server runs with; a
  conftest.py overrides it; `make_hermes(**changes)` (function): a further server with those
  options changed, one per option set, reset for the test;
- `@pytest.mark.hermes_fixture("file.json" | {...})`: seed a fixture (a path is relative to
  the test file); `@pytest.mark.hermes_faults([...])`: install faults;
- `@pytest.mark.hermes_audit` (or `--hermes-audit`/`hermes_audit = true` for every test): after
  the test, the server's audit of the test's traffic; an error finding fails the test;
- options and ini keys: `--hermes-agent`/`hermes_agent`, `--hermes-deterministic`/
  `hermes_deterministic`, `--hermes-serve-args`/`hermes_serve_args`, `hermes_startup_timeout`,
  `--hermes-no-restart`/`hermes_restart`, `--hermes-audit`/`hermes_audit`.

A failing test gets the server's log of that test (and the requests it received) as report
sections; a server that died is named in the report of the test it died in, then restarted
for the next test (or, with restarts off, every later test fails saying why).
"""

from __future__ import annotations

import atexit
import shlex
import signal
import warnings
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from hermes_server.testkit.options import HermesOptions

if TYPE_CHECKING:
    from hermes_server.testkit.audit import Audit
    from hermes_server.testkit.process import HermesServer

MARKERS = (
    ("hermes_fixture(document, ...): seed the `hermes` server with fixture documents "
     "(dicts, or JSON/YAML paths relative to the test file) after its reset"),
    ("hermes_faults(faults): install these faults (a list of fault objects, or one) on the `hermes` server "
     "after its reset"),
    ("hermes_audit: after the test, fail it when the server's audit of its traffic (GET /_fixture/audit) "
     "has an error finding; the findings go in a report section"),
)
_REQUESTS_SHOWN = 50


class HermesServerWarning(UserWarning):
    """The session's hermes-server died and was restarted."""


@dataclass
class _State:
    """What the hooks share: the server (once a test asked for it) and what happened to it."""

    server: HermesServer | None = None
    # The servers reset for the running test (`hermes`, `make_hermes`): their journals are its traffic.
    reset_for_test: list[HermesServer] = field(default_factory=list)
    log_mark: int = 0
    died_in: str | None = None
    startups: list[float] = field(default_factory=list)
    events: list[str] = field(default_factory=list)


STATE = pytest.StashKey[_State]()
AUDITS = pytest.StashKey[list[tuple[str, "Audit | str"]]]()  # per test: (server, its audit or why not)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hermes-server", "hermes-server fixture")
    group.addoption("--hermes-agent", default=None, metavar="NAME",
                    help="agent answering chat turns: echo (default), openai, script (ini: hermes_agent)")
    group.addoption("--hermes-deterministic", action="store_true", default=None,
                    help="reproducible ids and a settable clock (ini: hermes_deterministic)")
    group.addoption("--hermes-serve-args", default=None, metavar="ARGS",
                    help="more `hermes-server serve` flags, one shell-quoted string (ini: hermes_serve_args)")
    group.addoption("--hermes-no-restart", action="store_true", default=None,
                    help="fail the tests after a server crash instead of restarting it (ini: hermes_restart)")
    group.addoption("--hermes-audit", action="store_true", default=None,
                    help="audit every test's traffic; an error finding fails the test (ini: hermes_audit)")
    parser.addini("hermes_agent", "agent answering chat turns (echo, openai, script)", default="")
    parser.addini("hermes_deterministic", "reproducible ids and a settable clock", type="bool", default=False)
    parser.addini("hermes_serve_args", "more `hermes-server serve` flags", type="args", default=[])
    parser.addini("hermes_startup_timeout", "seconds the server gets to answer after it starts", default="20")
    parser.addini("hermes_restart", "restart a server that died (else later tests fail saying why)",
                  type="bool", default=True)
    parser.addini("hermes_audit", "audit every test's traffic (GET /_fixture/audit); an error finding fails it",
                  type="bool", default=False)


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    config.stash[STATE] = _State()


def _server_settings(config: pytest.Config) -> HermesOptions:
    """Command line over ini, for each setting of the server."""
    agent = config.getoption("hermes_agent") or config.getini("hermes_agent") or None
    deterministic = config.getoption("hermes_deterministic")
    serve_args = config.getoption("hermes_serve_args")
    timeout = config.getini("hermes_startup_timeout")
    try:
        startup_timeout = float(timeout)
    except ValueError:
        raise pytest.UsageError(f"hermes_startup_timeout = {timeout!r} is not a number of seconds") from None
    return HermesOptions(
        agent=agent,
        deterministic=bool(deterministic if deterministic is not None else config.getini("hermes_deterministic")),
        flags=tuple(shlex.split(serve_args) if serve_args is not None else config.getini("hermes_serve_args")),
        startup_timeout=startup_timeout,
    )


def _restarts(config: pytest.Config) -> bool:
    return not config.getoption("hermes_no_restart") and bool(config.getini("hermes_restart"))


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


@pytest.fixture(scope="session")
def hermes_options(pytestconfig: pytest.Config) -> HermesOptions:
    """What the session's server runs with: the command line and ini. Override it in a conftest.py
    (session scope) to give a directory's tests other flags, e.g. `HermesOptions(upstream_quirks=True)`."""
    return _server_settings(pytestconfig)


@pytest.fixture(scope="session")
def hermes_server(pytestconfig: pytest.Config, hermes_options: HermesOptions) -> Iterator[HermesServer]:
    """One real hermes-server for this test process, stopped (and its directory removed) at the end."""
    from hermes_server.testkit.process import HermesServer

    state = pytestconfig.stash[STATE]
    server = HermesServer(hermes_options)
    state.server = server
    atexit.register(server.stop)  # for a runner that ends without tearing fixtures down
    try:
        server.start()
        state.startups.append(server.startup_seconds or 0.0)
        yield server
    finally:
        server.stop()
        atexit.unregister(server.stop)
        state.server = None


class _Servers:
    """The extra servers of a session, one per option set, started on first use."""

    def __init__(self) -> None:
        self.by_options: dict[HermesOptions, HermesServer] = {}

    def get(self, options: HermesOptions, state: _State) -> HermesServer:
        from hermes_server.testkit.process import HermesServer

        server = self.by_options.get(options)
        if server is None or server.returncode is not None:
            if server is not None:
                server.stop()
            server = self.by_options[options] = HermesServer(options)
            atexit.register(server.stop)
            server.start()
            state.startups.append(server.startup_seconds or 0.0)
        return server

    def stop_all(self) -> None:
        for server in self.by_options.values():
            server.stop()
            atexit.unregister(server.stop)
        self.by_options.clear()


@pytest.fixture(scope="session")
def _hermes_servers() -> Iterator[_Servers]:
    servers = _Servers()
    try:
        yield servers
    finally:
        servers.stop_all()


@pytest.fixture
def make_hermes(hermes_options: HermesOptions, _hermes_servers: _Servers,
                pytestconfig: pytest.Config) -> Callable[..., HermesServer]:
    """A factory: `make_hermes(upstream_quirks=True, flags=["--max-concurrent-runs", "1"])` is a server
    with `hermes_options` changed so, reset (pass `reset=False` to keep its state). Servers are
    shared by every test asking for the same options and stopped when the session ends."""
    state = pytestconfig.stash[STATE]

    def make(*, reset: bool = True, **changes: Any) -> HermesServer:
        server = _hermes_servers.get(hermes_options.replace(**changes), state)
        if reset:
            server.control.reset()
            state.reset_for_test.append(server)
        return server

    return make


@pytest.fixture
def hermes(hermes_server: HermesServer, request: pytest.FixtureRequest) -> HermesServer:
    """The session's server, reset, then seeded and given faults by the test's markers."""
    control = hermes_server.control
    control.reset()
    request.config.stash[STATE].reset_for_test.append(hermes_server)
    for document in _marked_documents(request):
        try:
            control.seed(document)
        except Exception as exc:  # noqa: BLE001 - any refusal becomes the test's failure, with its reason
            pytest.fail(f"@pytest.mark.hermes_fixture: {_name(document)} was not loaded: {exc}", pytrace=False)
    faults = _marked_faults(request)
    if faults:
        try:
            control.faults.set(faults)
        except Exception as exc:  # noqa: BLE001
            pytest.fail(f"@pytest.mark.hermes_faults: refused: {exc}", pytrace=False)
    return hermes_server


def _name(document: Any) -> str:
    return str(document) if isinstance(document, Path) else "the fixture object"


def _marked_documents(request: pytest.FixtureRequest) -> list[Any]:
    """Fixture documents of every hermes_fixture marker, module's before class's before the test's."""
    out: list[Any] = []
    for mark in reversed(list(request.node.iter_markers("hermes_fixture"))):
        for document in (*mark.args, *mark.kwargs.values()):
            if isinstance(document, (str, Path)):
                path = Path(request.node.path).parent / document
                if not path.is_file():
                    pytest.fail(f"@pytest.mark.hermes_fixture: {path} does not exist", pytrace=False)
                document = path
            elif not isinstance(document, dict):
                pytest.fail(f"@pytest.mark.hermes_fixture takes file names or dicts, not {type(document).__name__}",
                            pytrace=False)
            out.append(document)
    return out


def _marked_faults(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for mark in reversed(list(request.node.iter_markers("hermes_faults"))):
        for arg in mark.args:
            items = arg if isinstance(arg, (list, tuple)) else [arg]
            if not all(isinstance(item, Mapping) for item in items):
                pytest.fail("@pytest.mark.hermes_faults takes fault objects (dicts or Fault builders) or lists "
                            "of them", pytrace=False)
            out.extend(dict(item) for item in items)
    return out


@pytest.fixture(autouse=True)
def _hermes_guard(request: pytest.FixtureRequest) -> None:
    """Before a test that uses the server: bring a dead one back (or fail saying why); a test with
    a hermes_* marker gets the `hermes` fixture even when it did not name it."""
    marked = any(request.node.get_closest_marker(name) for name in ("hermes_fixture", "hermes_faults", "hermes_audit"))
    if "hermes_server" not in request.fixturenames and not marked:
        return
    server = request.getfixturevalue("hermes_server")
    state = request.config.stash[STATE]
    if server.returncode is not None:
        _bring_back(server, state, request)
    if marked and "hermes" not in request.fixturenames:
        request.getfixturevalue("hermes")


def _bring_back(server: HermesServer, state: _State, request: pytest.FixtureRequest) -> None:
    where = f"during {state.died_in}" if state.died_in else "between tests"
    gone = f"hermes-server {_exit_text(server.returncode)} {where}"
    if not _restarts(request.config):
        pytest.fail(f"{gone}; not restarted (hermes_restart = false). Its last log lines:\n"
                    f"{server.log_text(limit=4000)}", pytrace=False)
    from hermes_server.testkit.process import HermesServerError

    try:
        server.restart()
    except HermesServerError as exc:
        pytest.fail(f"{gone}, and could not be restarted: {exc}", pytrace=False)
    note = f"{gone}; restarted over an empty home for {request.node.nodeid} ({server.startup_seconds:.2f} s)"
    state.died_in = None
    state.events.append(note)
    state.startups.append(server.startup_seconds or 0.0)
    request.node.add_report_section("setup", "hermes-server", note)
    warnings.warn(HermesServerWarning(note), stacklevel=1)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    state = item.config.stash[STATE]
    state.log_mark = state.server.log_size() if state.server else 0
    state.reset_for_test = []


def _audited(item: pytest.Item) -> bool:
    if item.get_closest_marker("hermes_audit"):
        return True
    return bool(item.config.getoption("hermes_audit") or item.config.getini("hermes_audit"))


def _audit(item: pytest.Item) -> str | None:
    """Audit each live server reset for this test (its journal is this test's traffic: a server
    that died is named by the report instead); keep the audits for the report section."""
    from hermes_server.testkit.audit import audit_each

    servers = dict.fromkeys(item.config.stash[STATE].reset_for_test)
    audits, failure = audit_each({s.base_url: s.control for s in servers if s.alive})
    item.stash[AUDITS] = audits
    return failure


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """With the audit on: after a test that passed, its traffic's error findings fail it (a test
    that failed already keeps its own failure; its audit is still shown)."""
    if not _audited(item):
        return (yield)
    try:
        result = yield
    except BaseException:
        _audit(item)
        raise
    failure = _audit(item)
    if failure is not None:
        pytest.fail(failure, pytrace=False)
    return result


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Name a server that died in this test; give a failing test the server's log and journal."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    state = item.config.stash[STATE]
    server = state.server
    if call.when == "call" and item.stash.get(AUDITS, None):
        report.sections.append(("hermes-server audit", "\n".join(
            f"{name}: {audit if isinstance(audit, str) else audit.describe()}" for name, audit in item.stash[AUDITS])))
    if server is None or "hermes_server" not in getattr(item, "fixturenames", ()):
        return
    died_now = server.returncode is not None and state.died_in is None
    if died_now:
        state.died_in = f"{item.nodeid} ({call.when})"
        report.sections.append(("hermes-server", (f"hermes-server {_exit_text(server.returncode)} during this test "
                                                  f"({call.when}); see its log below")))
    if report.failed or died_now:
        report.sections.append((f"hermes-server log ({call.when})", server.log_text(state.log_mark) or "(empty)"))
        if server.alive:
            report.sections.append(("hermes-server requests", _journal(server)))


def _journal(server: HermesServer) -> str:
    try:
        records = server.control.requests()
    except Exception as exc:  # noqa: BLE001 - a report must not fail because the journal cannot be read
        return f"(journal not readable: {exc})"
    shown = records[-_REQUESTS_SHOWN:]
    skipped = f"({len(records) - len(shown)} earlier ones not shown)\n" if len(records) > len(shown) else ""
    return skipped + ("\n".join(r.describe() for r in shown) or "(none since the last reset)")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On an xdist worker: hand the controller this worker's figures for the summary."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        state = session.config.stash[STATE]
        output["hermes_server"] = {"startups": state.startups, "events": state.events}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """On the xdist controller: collect a worker's figures."""
    data = getattr(node, "workeroutput", {}).get("hermes_server")
    if data:
        state = node.config.stash[STATE]
        state.startups.extend(data["startups"])
        state.events.extend(data["events"])


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash[STATE]
    if not state.startups:
        return
    times = sorted(state.startups)
    spread = f"{times[0]:.2f} s" if len(times) == 1 else f"{times[0]:.2f}-{times[-1]:.2f} s"
    count = f"{len(times)} start{'s' if len(times) != 1 else ''}"
    terminalreporter.write_line(f"hermes-server: {count}, start-up to first answer {spread}")
    for event in state.events:
        terminalreporter.write_line(event)
