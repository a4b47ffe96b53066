# `make run` and `make test` are the whole quick start: each sets up .venv first when it needs to.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed

.PHONY: run test lint ci clean spec sdks sdk-python

$(INSTALLED): pyproject.toml sdks/python/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' -e ./sdks/python
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

# The SDKs' generated cores, from spec/openapi.json (tests fail when the committed ones differ).
sdks: sdk-python

sdk-python: $(INSTALLED)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/openapi-python-client generate --path spec/openapi.json \
		--config sdks/python/openapi-python-client.yaml --meta none \
		--output-path sdks/python/queueflow_client/_generated --overwrite --fail-on-warning

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
