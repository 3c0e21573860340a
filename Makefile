# Two entry points on a fresh machine: `make test` and `make run`. Both create .venv first.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DB ?= sqlite:///./var/mvu.sqlite3

.PHONY: install test lint run bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

test: lint
	$(BIN)/pytest

# The main job: the HTTP API on the embedded ledger (migrated first). It prints the URL, where
# the token is and the docs URL; Ctrl-C stops it cleanly.
run: $(STAMP)
	mkdir -p var
	$(BIN)/mvu --db $(DB) serve

bench: $(STAMP)
	$(BIN)/python benchmarks/commit_path.py
	$(BIN)/python benchmarks/http.py

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache .hypothesis
