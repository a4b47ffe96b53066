# `make run` and `make test` are the whole quick start: each sets up .venv first when it needs to.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
TS_SDK := sdks/typescript
# npm ci writes this hidden lockfile; older than package-lock.json means node_modules is out of date.
TS_MODULES := $(TS_SDK)/node_modules/.package-lock.json

.PHONY: run test lint ci clean spec sdks sdk-python sdk-typescript chaos

$(INSTALLED): pyproject.toml sdks/python/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' -e ./sdks/python
	touch $@

run: $(INSTALLED)
	$(BIN)/queueflow serve --host 127.0.0.1 --port 8000

test: $(INSTALLED)
	$(BIN)/pytest

# Every chaos scenario at full size (tests/chaos): real servers, Python and TypeScript workers under faults; the
# report goes to docs/reliability.md. `make test` runs its short profile (tests/chaos/test_chaos.py).
chaos: $(INSTALLED) $(TS_MODULES)
	cd $(TS_SDK) && npm run build
	$(BIN)/python -m tests.chaos --doc docs/reliability.md

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/queueflow spec --check

ci: test lint

spec: $(INSTALLED)
	$(BIN)/queueflow spec

# Regenerate every SDK's generated code from spec/openapi.json (commit the result; tests fail on drift).
sdks: sdk-python sdk-typescript

sdk-python: $(INSTALLED)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/openapi-python-client generate --path spec/openapi.json \
		--config sdks/python/openapi-python-client.yaml --meta none \
		--output-path sdks/python/queueflow_client/_generated --overwrite --fail-on-warning

$(TS_MODULES): $(TS_SDK)/package.json $(TS_SDK)/package-lock.json
	cd $(TS_SDK) && npm ci --no-audit --no-fund
	touch $@

sdk-typescript: $(TS_MODULES)
	cd $(TS_SDK) && npm run generate

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
	rm -rf $(TS_SDK)/node_modules $(TS_SDK)/dist $(TS_SDK)/dist-test
