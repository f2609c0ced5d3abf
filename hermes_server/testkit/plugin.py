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
  `@pytest.mark.hermes_version("0.21.2")`: the test's `hermes` (and `make_hermes`'s servers) answer
  as that release;
- `@pytest.mark.hermes_audit` (or `--hermes-audit`/`hermes_audit = true` for every test): after
  the test, the server's audit of the test's traffic; an error finding fails the test;
- options and ini keys: `--hermes-version`/`hermes_version`, `--hermes-agent`/`hermes_agent`,
  `--hermes-deterministic`/`hermes_deterministic`, `--hermes-serve-args`/`hermes_serve_args`,
  `hermes_startup_timeout`, `--hermes-no-restart`/`hermes_restart`, `--hermes-audit`/`hermes_audit`.

A failing test gets the server's log of that test (and the requests it received) as report
sections; a server that died is named in the report of the test it died in, then restarted
for the next test (or, with restarts off, every later test fails saying why).
"""

from __future__ import annotations

import atexit
import shlex
import warnings
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from hermes_server.testkit import markers
from hermes_server.testkit.cmdline import accept_dash_values
from hermes_server.testkit.options import HermesOptions
from hermes_server.testkit.report import exit_text, journal, startup_line

if TYPE_CHECKING:
    from hermes_server.testkit.audit import Audit
    from hermes_server.testkit.process import HermesServer

# Options whose value is `serve` flags, so may start with a dash (cmdline.py).
_FLAG_VALUED = ("--hermes-serve-args",)


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
# Per test: the server its `hermes` fixture gave it (another than the session's for a
# hermes_version marker) and where that server's log stood before the test.
TEST_SERVER = pytest.StashKey[tuple["HermesServer", int]]()
AUDITS = pytest.StashKey[list[tuple[str, "Audit | str"]]]()  # per test: (server, its audit or why not)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hermes-server", "hermes-server fixture")
    group.addoption("--hermes-version", default=None, metavar="VERSION",
                    help="the Hermes release the server answers as: 0.19.0 (default), 0.20.4, 0.21.2, 0.21.6 "
                         "(ini: hermes_version)")
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
    parser.addini("hermes_version", "the Hermes release the server answers as (serve --hermes-version)", default="")
    parser.addini("hermes_agent", "agent answering chat turns (echo, openai, script)", default="")
    parser.addini("hermes_deterministic", "reproducible ids and a settable clock", type="bool", default=False)
    parser.addini("hermes_serve_args", "more `hermes-server serve` flags", type="args", default=[])
    parser.addini("hermes_startup_timeout", "seconds the server gets to answer after it starts", default="20")
    parser.addini("hermes_restart", "restart a server that died (else later tests fail saying why)",
                  type="bool", default=True)
    parser.addini("hermes_audit", "audit every test's traffic (GET /_fixture/audit); an error finding fails it",
                  type="bool", default=False)
    accept_dash_values(parser, _FLAG_VALUED)


def pytest_configure(config: pytest.Config) -> None:
    for line in markers.MARKERS:
        config.addinivalue_line("markers", line)
    config.stash[STATE] = _State()


def _server_settings(config: pytest.Config) -> HermesOptions:
    """Command line over ini, for each setting of the server."""
    agent = config.getoption("hermes_agent") or config.getini("hermes_agent") or None
    version = config.getoption("hermes_version") or config.getini("hermes_version").strip() or None
    deterministic = config.getoption("hermes_deterministic")
    serve_args = config.getoption("hermes_serve_args")
    timeout = config.getini("hermes_startup_timeout")
    try:
        startup_timeout = float(timeout)
    except ValueError:
        raise pytest.UsageError(f"hermes_startup_timeout = {timeout!r} is not a number of seconds") from None
    return HermesOptions(
        agent=agent,
        hermes_version=version,
        deterministic=bool(deterministic if deterministic is not None else config.getini("hermes_deterministic")),
        flags=tuple(shlex.split(serve_args) if serve_args is not None else config.getini("hermes_serve_args")),
        startup_timeout=startup_timeout,
    )


def _restarts(config: pytest.Config) -> bool:
    return not config.getoption("hermes_no_restart") and bool(config.getini("hermes_restart"))




@pytest.fixture(scope="session")
def hermes_options(pytestconfig: pytest.Config) -> HermesOptions:
    """What the session's server runs with: the command line and ini. Override it in a conftest.py
    (session scope) to give a directory's tests other flags, e.g. `HermesOptions(upstream_quirks=True)`."""
    return _server_settings(pytestconfig)


def _started(server: HermesServer, state: _State) -> HermesServer:
    """`server` started, or the test failed with the reason alone: the exit code and the server's
    own words, not the launcher's traceback (its lines say nothing the message does not)."""
    from hermes_server.testkit.process import HermesServerError

    try:
        server.start()
    except HermesServerError as exc:
        reason = str(exc)
    else:
        state.startups.append(server.startup_seconds or 0.0)
        return server
    pytest.fail(reason, pytrace=False)


@pytest.fixture(scope="session")
def hermes_server(pytestconfig: pytest.Config, hermes_options: HermesOptions) -> Iterator[HermesServer]:
    """One real hermes-server for this test process, stopped (and its directory removed) at the end."""
    from hermes_server.testkit.process import HermesServer

    state = pytestconfig.stash[STATE]
    server = HermesServer(hermes_options)
    state.server = server
    atexit.register(server.stop)  # for a runner that ends without tearing fixtures down
    try:
        yield _started(server, state)
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
            _started(server, state)
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


def _test_options(request: pytest.FixtureRequest) -> HermesOptions:
    """`hermes_options`, with the release of the test's hermes_version marker when it has one."""
    options: HermesOptions = request.getfixturevalue("hermes_options")
    version = markers.marked_version(request)
    return options if version is None else options.replace(hermes_version=version)


@pytest.fixture
def make_hermes(_hermes_servers: _Servers, request: pytest.FixtureRequest) -> Callable[..., HermesServer]:
    """A factory: `make_hermes(upstream_quirks=True, flags=["--max-concurrent-runs", "1"])` is a server
    with `hermes_options` (and the test's hermes_version marker) changed so, reset (pass `reset=False`
    to keep its state). Servers are shared by every test asking for the same options and stopped
    when the session ends."""
    state = request.config.stash[STATE]
    base = _test_options(request)

    def make(*, reset: bool = True, **changes: Any) -> HermesServer:
        server = _hermes_servers.get(base.replace(**changes), state)
        if reset:
            server.control.reset()
            state.reset_for_test.append(server)
        return server

    return make


def _session_server(request: pytest.FixtureRequest) -> HermesServer:
    """The session's server for this test, brought back first if it died (or the test fails saying why)."""
    server: HermesServer = request.getfixturevalue("hermes_server")
    state = request.config.stash[STATE]
    if server.returncode is not None:
        _bring_back(server, state, request)
    request.node.stash[TEST_SERVER] = (server, state.log_mark)
    return server


@pytest.fixture
def hermes(request: pytest.FixtureRequest, _hermes_servers: _Servers) -> HermesServer:
    """The session's server (or, for a test marked with another hermes_version, the session's
    server of that release), reset, then seeded and given faults by the test's markers."""
    state = request.config.stash[STATE]
    options = _test_options(request)
    if options == request.getfixturevalue("hermes_options"):
        server = _session_server(request)
    else:
        server = _hermes_servers.get(options, state)
        request.node.stash[TEST_SERVER] = (server, server.log_size())
    control = server.control
    control.reset()
    state.reset_for_test.append(server)
    refusal: str | None = None
    for document in markers.marked_documents(request):
        try:
            control.seed(document)
        except Exception as exc:  # noqa: BLE001 - any refusal becomes the test's failure, with its reason
            refusal = f"@pytest.mark.hermes_fixture: {markers.document_name(document)} was not loaded: {exc}"
            break
    else:
        refusal = _install_faults(server, markers.marked_faults(request))
    if refusal:  # failed here, outside the except: no "during handling of the above exception" chain
        pytest.fail(refusal, pytrace=False)
    return server


def _install_faults(server: HermesServer, faults: list[dict[str, Any]]) -> str | None:
    """Install the marked faults; the refusal's text, if the server refused them."""
    if faults:
        try:
            server.control.faults.set(faults)
        except Exception as exc:  # noqa: BLE001
            return f"@pytest.mark.hermes_faults: refused: {exc}"
    return None


@pytest.fixture(autouse=True)
def _hermes_guard(request: pytest.FixtureRequest) -> None:
    """Before a test that uses the server: bring a dead one back (or fail saying why); a test with
    a hermes_* marker gets the `hermes` fixture even when it did not name it."""
    if "hermes_server" in request.fixturenames:
        _session_server(request)
    marked = any(request.node.get_closest_marker(name) for name in markers.NAMES)
    if marked and "hermes" not in request.fixturenames:
        request.getfixturevalue("hermes")


def _bring_back(server: HermesServer, state: _State, request: pytest.FixtureRequest) -> None:
    where = f"during {state.died_in}" if state.died_in else "between tests"
    gone = f"hermes-server {exit_text(server.returncode)} {where}"
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
    if call.when == "call" and item.stash.get(AUDITS, None):
        report.sections.append(("hermes-server audit", "\n".join(
            f"{name}: {audit if isinstance(audit, str) else audit.describe()}" for name, audit in item.stash[AUDITS])))
    if TEST_SERVER not in item.stash:
        return
    server, log_mark = item.stash[TEST_SERVER]
    # The session's server is brought back before the next test that needs it, naming this one;
    # another (a hermes_version marker's) is started anew by the next test that asks for it.
    died_now = server.returncode is not None and (server is not state.server or state.died_in is None)
    if died_now:
        if server is state.server:
            state.died_in = f"{item.nodeid} ({call.when})"
        report.sections.append(("hermes-server", (f"hermes-server {exit_text(server.returncode)} during this test "
                                                  f"({call.when}); see its log below")))
    if report.failed or died_now:
        report.sections.append((f"hermes-server log ({call.when})", server.log_text(log_mark) or "(empty)"))
        if server.alive:
            report.sections.append(("hermes-server requests", journal(server)))



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
    terminalreporter.write_line(startup_line(state.startups))
    for event in state.events:
        terminalreporter.write_line(event)
