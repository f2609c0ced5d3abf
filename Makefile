# `make serve` and `make test` create .venv on first use and install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HERMES_HOME ?= $(CURDIR)/.hermes-home
export HERMES_HOME

.PHONY: serve test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/hermes-server serve

test: $(STAMP)
	$(BIN)/python -m pytest -q

# Full run (about 15 minutes; installs wrk via apt-get when root). Short: make bench BENCH_ARGS=--quick
bench: $(STAMP)
	$(BIN)/python -m benchmarks.run $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache
