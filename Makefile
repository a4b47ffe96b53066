# `make run` and `make test` are the whole quick start: each sets up .venv first when it needs to.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
TS_SDK := sdks/typescript
# npm ci writes this hidden lockfile; older than package-lock.json means node_modules is out of date.
TS_MODULES := $(TS_SDK)/node_modules/.package-lock.json
# The Python distributions beside the server's, each installed editable into .venv (a new one under sdks/ joins here).
PY_SDKS := sdks/worker sdks/python
# pytest-xdist's worker processes for `make test`; `make test PYTEST_WORKERS=0` runs the suite in one process.
# More workers than cores: most of the slow tests wait on servers and PostgreSQL rather than compute.
PYTEST_WORKERS ?= 3

.PHONY: run test lint ci clean spec sdks sdk-python sdk-typescript bench bench-smoke endurance pgbench chromium pgbouncer chaos vendor release

# uv installs what pip would, from PyPI, in seconds rather than a minute and a half (CI builds .venv every run).
$(INSTALLED): pyproject.toml $(PY_SDKS:%=%/pyproject.toml)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[dev]' $(PY_SDKS:%=-e ./%)
	touch $@

run: $(INSTALLED)
	$(BIN)/queueflow serve --host 127.0.0.1 --port 8000

# The slowest tests start first, and the ones sharing a module's server or sdks/typescript/dist stay on one worker
# (`--dist loadgroup`, tests/conftest.py).
test: $(INSTALLED) pgbench chromium pgbouncer
	$(BIN)/pytest -n $(PYTEST_WORKERS)

# The dashboard's browser tests drive Debian's Chromium (Playwright downloads no browser); without it, and without
# root to install it, they skip (in CI they fail instead).
chromium:
	@test -x /usr/bin/chromium || { test "$$(id -u)" = 0 && apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } || \
		echo "no /usr/bin/chromium: the dashboard's browser tests will skip"

# The chaos suite's `pooler` scenario runs the soak through PgBouncer in transaction mode (Debian's pgbouncer,
# started by the test on a port of its own); without it, and without root to install it, that scenario fails.
pgbouncer:
	@command -v pgbouncer >/dev/null || test -x /usr/sbin/pgbouncer || { test "$$(id -u)" = 0 && apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer; } || \
		echo "no pgbouncer: the chaos suite's pooler scenario cannot run"

# Every chaos scenario at full size (tests/chaos): real servers, Python and TypeScript workers under faults; the
# report goes to docs/reliability.md. `make test` runs its short profile (tests/chaos/test_chaos.py).
chaos: $(INSTALLED) $(TS_MODULES) pgbouncer
	cd $(TS_SDK) && npm run build
	$(BIN)/python -m tests.chaos --doc docs/reliability.md

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/queueflow spec --check

# `make release VERSION=x.y.z`: one version for the server and both SDKs, from one commit: refuses a dirty tree or
# failing tests, then commits, tags and pins it for tests/compat (scripts/release.py; docs/compatibility.md).
release: $(INSTALLED) $(TS_MODULES)
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=x.y.z"; exit 2; }
	$(BIN)/python scripts/release.py $(VERSION)

# .ci/run runs the two at once (`make -j2 ci` does too).
ci: test lint

# The benchmark (bench/): every figure beside its baseline measured in the same run; writes bench/RESULTS.md.
# Its worker drains build the TypeScript SDK (sdks/typescript/dist) when it is missing.
# Its peers (PgQueuer, Procrastinate, DBOS Transact) get a virtualenv of their own, bench/.peers-venv, made on first
# use. The latest run's report is bench/RESULTS.md; every run's is kept in bench/results/.
bench: $(INSTALLED) pgbench $(TS_MODULES)
	$(BIN)/python -m bench --profile full

# The same harness at tiny sizes, once: proves every scenario runs (the test suite runs it too).
bench-smoke: $(INSTALLED) pgbench $(TS_MODULES)
	$(BIN)/python -m bench --profile smoke

# Issue 42's endurance run (bench/endurance): QueueFlow, PgQueuer and Procrastinate at 150 and 1,000 jobs/s offered
# under a held xmin horizon, REPEATABLE READ readers, overload, cut connections and a killed worker, 10 minutes a
# phase: hours, on a quiet machine. Writes docs/endurance.md and its plots in docs/endurance/. Not part of `make test`,
# which runs its smoke profile (tests/bench/test_endurance_smoke.py); `ENDURANCE_PROFILE=short` holds 2 minutes.
ENDURANCE_PROFILE ?= full
endurance: $(INSTALLED)
	$(BIN)/python -m bench.endurance --profile $(ENDURANCE_PROFILE)

# pgbench measures the raw SQL ceiling; Debian ships it in postgresql-client.
pgbench:
	@command -v pgbench >/dev/null || ls /usr/lib/postgresql/*/bin/pgbench >/dev/null 2>&1 \
		|| (apt-get update -qq && apt-get install -y -qq postgresql-client)

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

# The dashboard's and the API docs' browser assets (htmx, Redoc, Swagger UI): fetched from the npm registry at the
# versions pinned in tools/vendor.py, checked against their SHA-256 and copied into server/queueflow/dashboard/static/,
# where they are committed, so the wheel builds and the server runs with no network.
vendor: $(INSTALLED)
	$(BIN)/python -m tools.vendor

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache bench/.peers-venv
	rm -rf $(TS_SDK)/node_modules $(TS_SDK)/dist $(TS_SDK)/dist-test
