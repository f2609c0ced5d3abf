# `make serve` and `make test` create .venv on first use and install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Serving needs the runtime dependencies alone; the test extra (pytest, schemathesis, openai, …)
# comes with the first `make test` or `make lint`.
RUNTIME_STAMP := $(VENV)/.installed-runtime
HERMES_HOME ?= $(CURDIR)/.hermes-home
export HERMES_HOME
# Bytecode caches on (some sandboxes switch them off): without them pytest rewrites every test
# module's asserts again in each worker, and each server the tests start compiles the package
# again (collection alone went from 2.8 s to 9.5 s a worker).
unexport PYTHONDONTWRITEBYTECODE
# The real hermes-agent, for the tests that run its SessionDB and `hermes` CLI on our state.db,
# and its API server (aiohttp, pinned by 0.19.0's extras, added on its own so a venv made before stays).
UPSTREAM_VENV := .venv-upstream
UPSTREAM_STAMP := $(UPSTREAM_VENV)/.installed
UPSTREAM_SERVER_STAMP := $(UPSTREAM_VENV)/.installed-aiohttp
# The declared floors: every direct dependency at the lowest version pyproject.toml allows.
MIN_VENV := .venv-min
MIN_STAMP := $(MIN_VENV)/.installed

.PHONY: serve cli lint test test-fast test-min test-container wheelhouse bench clean browser
# `make serve PORT=9000 HOST=0.0.0.0`: passed on as --port/--host (else API_SERVER_PORT/HOST or 8642/127.0.0.1).
PORT ?=
HOST ?=

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(RUNTIME_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $(RUNTIME_STAMP)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP) $(RUNTIME_STAMP)

# HERMES_SERVER_LAUNCHER: a port in use (or a bad host) is then refused with `make serve PORT=…`
# (HOST=…), the way this target is run, not with the --port option make passes it as.
serve: private export HERMES_SERVER_LAUNCHER := make serve
serve: $(RUNTIME_STAMP)
	@echo "make serve: other commands run as $(BIN)/hermes-server COMMAND, or make cli ARGS='COMMAND ...'"
	$(BIN)/hermes-server serve $(if $(PORT),--port $(PORT)) $(if $(HOST),--host $(HOST))

# Any hermes-server command with this checkout's venv and home: make cli ARGS='seed fixture.json'
cli: $(RUNTIME_STAMP)
	$(BIN)/hermes-server $(ARGS)

# Made once (about 20 s from the package registry), then reused; `make clean` keeps it.
$(UPSTREAM_STAMP):
	rm -rf $(UPSTREAM_VENV)
	$(PYTHON) -m venv $(UPSTREAM_VENV)
	$(UPSTREAM_VENV)/bin/pip install -q --disable-pip-version-check 'hermes-agent==0.19.0'
	$(UPSTREAM_VENV)/bin/python -c 'import hermes_state'
	touch $@

$(UPSTREAM_SERVER_STAMP): $(UPSTREAM_STAMP)
	$(UPSTREAM_VENV)/bin/pip install -q --disable-pip-version-check 'aiohttp==3.14.1'
	touch $@

# Static checks, configured in pyproject.toml ([tool.ruff], [tool.mypy]); .ci/run runs them before the tests.
lint: $(STAMP)
	$(BIN)/ruff check hermes_server tests tools benchmarks
	$(BIN)/mypy

# Headless Chromium (Debian's package) for the inspector's browser tests: installed when missing
# and we are root (as in CI); elsewhere, or with `make test BROWSER=0`, nothing is installed and
# those tests skip, saying so (under CI=true they fail).
BROWSER ?= 1
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "make: installing chromium (apt-get) for the inspector's browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "make: no chromium and not root: the inspector's browser tests will skip"; fi

# Both tiers run on two workers (one module per worker at a time: module-scoped servers stay
# shared) and end with the 15 slowest tests. More pytest arguments: make test ARGS='-k fork -x'.
PYTEST := $(BIN)/python -m pytest -q --dist loadfile --durations=15
# The whole suite, real hermes-agent included (an interop test that skips fails the run here).
test: $(STAMP) $(UPSTREAM_STAMP) $(UPSTREAM_SERVER_STAMP) $(if $(filter 0,$(BROWSER)),,browser)
	HERMES_UPSTREAM_VENV=$(CURDIR)/$(UPSTREAM_VENV) $(PYTEST) -n 2 $(ARGS)

# The inner loop: everything but the slow, interop and container tests (docs/pytest.md).
# Four workers: these tests spend much of their time waiting on their servers, so workers beyond
# the two cores use what two leave idle (measured on 1,980 tests: 51-56 s with four, 58-62 s with three).
FAST := -n 4 -m "not slow and not interop and not container"
test-fast: $(STAMP)
	$(PYTEST) $(FAST) $(ARGS)

# The inner loop again on the lowest versions pyproject.toml allows (tools/lowest_direct.py pins
# each direct dependency, runtime and extras, to its floor; pip picks the rest), so a lower bound
# the code does not run on fails here, and in .ci/run, not on a user's install. Its own venv,
# remade when pyproject.toml changes.
$(MIN_STAMP): pyproject.toml tools/lowest_direct.py
	rm -rf $(MIN_VENV)
	$(PYTHON) -m venv $(MIN_VENV)
	$(PYTHON) tools/lowest_direct.py test yaml > $(MIN_VENV)/constraints.txt
	$(MIN_VENV)/bin/pip install -q --upgrade pip
	$(MIN_VENV)/bin/pip install -q -c $(MIN_VENV)/constraints.txt -e '.[test,yaml]'
	touch $@
test-min: $(MIN_STAMP)
	$(MIN_VENV)/bin/python -m pytest -q --dist loadfile --durations=15 $(FAST) $(ARGS)

# The image itself: build, start, healthcheck, lifecycle check, docker stop (needs a Docker
# daemon; skipped with the reason without one). CONTAINER_BASE=image builds on a local base
# (docs/container.md: making one from Debian's packages when no registry is reachable).
test-container: $(STAMP)
	HERMES_CONTAINER_BASE=$(CONTAINER_BASE) $(BIN)/python -m pytest -q -rs tests/test_container_docker.py

# Every locked package (requirements.lock) as a wheel for the image: CPython 3.11 on glibc 2.36
# (bookworm) and this machine's architecture, downloaded once (about 7 MB); `docker build` then
# installs from wheelhouse/ without asking any index (docs/container.md: the offline build).
WHEEL_PLATFORMS := $(foreach v,$(shell seq 36 -1 17) 12 5,--platform manylinux_2_$(v)_$(shell uname -m))
wheelhouse: wheelhouse/.complete
wheelhouse/.complete: requirements.lock | $(BIN)/python
	$(BIN)/pip download -q --no-deps --only-binary=:all: --implementation cp --python-version 3.11 --abi cp311 \
	  $(WHEEL_PLATFORMS) -d wheelhouse -r requirements.lock
	touch $@

# Full run (about 17 minutes; installs wrk via apt-get when root). Short: make bench BENCH_ARGS=--quick
bench: $(STAMP)
	$(BIN)/python -m benchmarks.run $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(MIN_VENV) .pytest_cache
