# Queue inspector: every target is non-interactive and safe to re-run.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PORT ?= 8000
GRPC_PORT ?= 9095
HOST ?= 127.0.0.1
# The interpreter .venv is made from: Debian's optimised CPython 3.11 when it
# can make a virtualenv, else python3 (scripts/pick-python.sh says why).
ifeq ($(origin PYTHON),undefined)
PYTHON := $(shell bash scripts/pick-python.sh)
endif
VENV := .venv
PY := $(VENV)/bin/python
# Named after the interpreter, so picking another one installs again.
STAMP := $(VENV)/.installed$(subst /,-,$(PYTHON))
PYTEST_ARGS ?=
# Test workers (pytest-xdist): a test module, with its server and browser,
# stays on one worker. TEST_JOBS=0 runs everything in this one process.
TEST_JOBS ?= 2

.PHONY: help venv assets migrate demo-user static serve demo test test-deps lint protos screenshots

help:
	@echo "make demo   - set up, start Daphne on http://$(HOST):$(PORT) with a demo login and the load generator"
	@echo "make serve  - set up and start Daphne on http://$(HOST):$(PORT) (PORT=... to change)"
	@echo "make test   - install what the tests need, set up and run the whole test suite"
	@echo "make lint   - ruff check, ruff format --check, mypy scheduler_core"
	@echo "make screenshots - refresh docs/screenshots/ from the browser tests"
	@echo "make assets - npm ci and bundle the front-end libraries (CodeMirror, uPlot) for the pages"

# The stamp is newer than pyproject.toml once its dependencies are installed,
# so re-running costs nothing until pyproject.toml changes. A .venv made from
# another interpreter (pyvenv.cfg's `executable`) is made anew, not mixed.
$(STAMP): pyproject.toml
	@base="$$($(PYTHON) -c 'import os, sys; print(os.path.realpath(sys.executable))')"; \
	if [ -f $(VENV)/pyvenv.cfg ] && ! grep -qxF "executable = $$base" $(VENV)/pyvenv.cfg; then \
	  echo "make: $(VENV) was made from another Python; making it anew from $$base"; \
	  rm -rf $(VENV); \
	fi
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

venv: $(STAMP)

# Front-end libraries from the npm registry (package-lock.json), bundled by
# esbuild into dashboard/static/dashboard/vendor/ (not committed), one module
# per entry in dashboard/assets/. Needs Node.js and npm; nothing is fetched by
# a page at run time. Re-running costs nothing until an input changes.
NPM_STAMP := node_modules/.installed-stamp
VENDOR_STAMP := dashboard/static/dashboard/vendor/.built

$(NPM_STAMP): package.json package-lock.json
	@command -v npm >/dev/null || { echo "make: npm is needed for the front-end libraries (Debian: apt-get install nodejs npm)" >&2; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(VENDOR_STAMP): $(NPM_STAMP) scripts/build-assets.mjs $(wildcard dashboard/assets/*.js)
	node scripts/build-assets.mjs
	@touch $@

assets: $(VENDOR_STAMP)

migrate: venv
	$(PY) manage.py migrate --noinput -v0

demo-user: migrate
	$(PY) manage.py create_demo_user

static: venv assets
	$(PY) manage.py collectstatic --noinput -v0

serve: migrate static
	@echo "Serving on http://$(HOST):$(PORT)/ (health: /healthz)"
	exec $(PY) -m config.serve -b $(HOST) -p $(PORT) config.asgi:application

# Daphne and the load generator run as children of one shell whose trap stops
# both on Ctrl-C or when Daphne exits; if only the load generator fails, the
# server keeps serving (the inspector is still useful).
demo: export DEBUG = 1
demo: export GRPC_PORT := $(GRPC_PORT)
demo: migrate static demo-user
	$(PY) manage.py seed_demo_config
	@echo "Serving on http://$(HOST):$(PORT)/ with the load generator (Ctrl-C stops both)"
	@$(PY) -m config.serve -b $(HOST) -p $(PORT) config.asgi:application & daphne_pid=$$!; \
	loadgen_pid=""; \
	stop() { kill $$loadgen_pid $$daphne_pid 2>/dev/null || true; wait 2>/dev/null || true; }; \
	trap 'stop; exit 130' INT TERM; trap stop EXIT; \
	for _ in $$(seq 1 300); do \
	  if $(PY) -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=1)" \
	    "http://$(HOST):$(PORT)/healthz" 2>/dev/null; then break; fi; \
	  kill -0 $$daphne_pid 2>/dev/null || { echo "daphne exited" >&2; exit 1; }; \
	  sleep 0.2; \
	done; \
	$(PY) manage.py loadgen --url http://$(HOST):$(PORT) --grpc 127.0.0.1:$(GRPC_PORT) & loadgen_pid=$$!; \
	wait $$daphne_pid

# Debian packages the tests need (Chromium, redis-server, postgresql, prometheus), installed
# only where missing; the script says what it found. Make builds prerequisites
# left to right, so python3-venv is there before the venv. `make demo` needs none.
test-deps:
	@PYTHON=$(PYTHON) bash scripts/test-deps.sh

# The session starts its own throwaway PostgreSQL and Redis (tests/servers.py).
test: test-deps venv assets
	$(VENV)/bin/pytest -n $(TEST_JOBS) --dist loadfile $(PYTEST_ARGS)

# Refreshes docs/screenshots/ from the browser tests (a plain test run does not).
screenshots: test-deps venv assets
	UPDATE_SCREENSHOTS=1 $(VENV)/bin/pytest -q tests/e2e/test_inspector_browser.py tests/e2e/test_editor_yaml_browser.py tests/e2e/test_queue_drilldown_browser.py tests/e2e/test_actor_tree_browser.py

# Regenerates scheduler_core/pb/ from protos/ (the generated modules are committed).
protos: venv
	$(PY) -m scheduler_core.pb.generate

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy scheduler_core
