# `make run` and `make test` are the whole quick start: each sets up .venv first when it needs to.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed

.PHONY: run test lint ci clean spec

$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

run: $(INSTALLED)
	$(BIN)/queueflow serve --host 127.0.0.1 --port 8000

test: $(INSTALLED)
	$(BIN)/pytest

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/queueflow spec --check

ci: test lint

spec: $(INSTALLED)
	$(BIN)/queueflow spec

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
