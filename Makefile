# Two entry points on a fresh machine: `make test` and `make run`. Both create .venv first.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
# Two stamps: serving needs only the package; tests, lint and type checks need the dev extras too.
RUN_STAMP := $(VENV)/.run-stamp
DEV_STAMP := $(VENV)/.dev-stamp
DB ?= sqlite:///./var/mvu.sqlite3

.PHONY: install test lint run bench soak clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUN_STAMP)

# The dev extras include the package itself, so this stamp stands for both.
$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(RUN_STAMP) $(DEV_STAMP)

install: $(DEV_STAMP)

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

test: lint
	$(BIN)/pytest

# The main job: the HTTP API on the embedded ledger (migrated first). It prints the URL, where
# the token is and the docs URL; Ctrl-C stops it cleanly.
run: $(RUN_STAMP)
	mkdir -p var
	$(BIN)/mvu --db $(DB) serve

bench: $(RUN_STAMP)
	$(BIN)/python benchmarks/commit_path.py
	$(BIN)/python benchmarks/http.py

# Not part of `make test`: 1,000 SIGKILLs of writers on SQLite and 100 on PostgreSQL, each followed by a
# check that nothing acknowledged was lost (tests/reliability/soak.py; the figures are its last line).
soak: $(DEV_STAMP)
	$(BIN)/python -m tests.reliability.soak

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache .hypothesis
