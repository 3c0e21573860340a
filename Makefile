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

run: $(STAMP)
	mkdir -p var
	$(BIN)/mvu --db $(DB) db upgrade
	$(BIN)/mvu --db $(DB) status

bench: $(STAMP)
	$(BIN)/python benchmarks/commit_path.py

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache .hypothesis
