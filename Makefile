# Two entry points on a fresh machine: `make test` and `make run`. Both create .venv first.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
# Two stamps: serving needs only the package; tests, lint and type checks need the dev extras too.
RUN_STAMP := $(VENV)/.run-stamp
DEV_STAMP := $(VENV)/.dev-stamp
DB ?= sqlite:///./var/mvu.sqlite3
# `make run PORT=8788` when another program holds the default one.
PORT ?= 8787

CHROMIUM ?= /usr/bin/chromium

.PHONY: install install-browser test lint run bench soak clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# quickjs-bindings replaced the quickjs package, and both install the module `quickjs`: a venv made
# before the switch drops the old one first (only while the new one is absent, whose files it shares).
DROP_OLD_QUICKJS := $(BIN)/python -m pip show -q quickjs-bindings >/dev/null 2>&1 || \
	$(BIN)/python -m pip uninstall -y -q quickjs >/dev/null 2>&1 || true

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(DROP_OLD_QUICKJS)
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUN_STAMP)

# The dev extras include the package itself, so this stamp stands for both.
$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(DROP_OLD_QUICKJS)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(RUN_STAMP) $(DEV_STAMP)

install: $(DEV_STAMP)

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-logo --no-cache

# The inspector's browser tests drive Debian's Chromium through Playwright (the Python package is
# in the dev extras); Playwright's own browser download is never used. A font with Chinese glyphs
# comes with it, or Chinese text renders as boxes. Installing needs root (CI runs as root);
# otherwise this says what to run and the browser tests skip.
install-browser:
	@if [ -x $(CHROMIUM) ] && fc-list :lang=zh | grep -q .; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
			chromium fonts-wqy-microhei; \
	else echo "make install-browser: run as root (apt-get install chromium fonts-wqy-microhei) for the browser tests"; fi

# One worker per core (pytest-xdist); `make test TEST_WORKERS=0` runs in one process, as a
# debugger wants. Every test is safe beside another: free ports, its own temporary files, its own
# PostgreSQL schema per worker.
TEST_WORKERS ?= auto

test: lint install-browser
	$(BIN)/pytest -n $(TEST_WORKERS)

# The main job: the HTTP API on the embedded ledger (migrated first). It prints the URL, where
# the token is and the docs URL; Ctrl-C stops it cleanly. mvu makes var/ itself (0700), and
# only once the port is its own: a start that fails leaves nothing behind.
run: $(RUN_STAMP)
	$(BIN)/mvu --db $(DB) serve --port $(PORT)

bench: $(RUN_STAMP)
	$(BIN)/python benchmarks/commit_path.py
	$(BIN)/python benchmarks/http.py

# Not part of `make test`: 1,000 SIGKILLs of writers on SQLite and 100 on PostgreSQL, each followed by a
# check that nothing acknowledged was lost (tests/reliability/soak.py; the figures are its last line).
soak: $(DEV_STAMP)
	$(BIN)/python -m tests.reliability.soak

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache .hypothesis .import_linter_cache
