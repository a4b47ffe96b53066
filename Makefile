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

.PHONY: run test lint ci clean spec sdks sdk-python sdk-typescript bench bench-smoke endurance debs pgbench chromium pgbouncer chaos vendor release

# uv installs what pip would, from PyPI, in seconds rather than a minute and a half (CI builds .venv every run).
$(INSTALLED): pyproject.toml $(PY_SDKS:%=%/pyproject.toml)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[dev]' $(PY_SDKS:%=-e ./%)
	touch $@

run: $(INSTALLED)
	$(BIN)/queueflow serve --host 127.0.0.1 --port 8000

# Everything a test needs is a prerequisite here, so a fresh clone's `make test` is the whole set-up (Python in
# .venv, the TypeScript SDK's Node modules, Debian's packages); `make -j3 test` fetches the three at once.
# The slowest tests start first, and the ones sharing a module's server or sdks/typescript/dist stay on one worker
# (`--dist loadgroup`, tests/conftest.py).
test: $(INSTALLED) $(TS_MODULES) debs
	$(BIN)/pytest -n $(PYTEST_WORKERS)

# The Debian packages the tests use, in one apt-get (two at once would fight over dpkg's lock): Chromium for the
# dashboard's browser tests (Playwright downloads no browser), pgbench (postgresql-client) for the benchmark's
# baselines, PgBouncer for the pooler tests and the chaos suite's `pooler` scenario. Without root to install them
# the browser and pooler tests skip outside CI (in CI they fail instead).
DEB_CHECKS := chromium:/usr/bin/chromium pgbouncer:/usr/sbin/pgbouncer postgresql-client:/usr/lib/postgresql/*/bin/pgbench
debs:
	@missing=""; for check in $(DEB_CHECKS); do ls -d $${check#*:} >/dev/null 2>&1 || missing="$$missing $${check%%:*}"; done; \
	test -z "$$missing" || { test "$$(id -u)" = 0 && apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; } || \
		echo "could not install$$missing (not root): the tests that use them will skip"

# Kept as names of their own for the targets and docs that name them.
chromium pgbouncer pgbench: debs

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

# The tests and the lint (ruff, mypy, the spec check) at once: much of the tests' time is spent waiting on servers
# and PostgreSQL. The lint's output comes after the tests' (their summary line stays the run's last but one), and
# either failing fails the run. .ci/run is `make -j3 ci` and nothing else but starting PostgreSQL.
ci: $(INSTALLED) $(TS_MODULES) debs
	@log=$$(mktemp); $(MAKE) --no-print-directory lint >$$log 2>&1 & lint=$$!; \
	$(MAKE) --no-print-directory test; tests=$$?; \
	wait $$lint; linted=$$?; echo "--- make lint (exit $$linted)"; cat $$log; rm -f $$log; \
	test $$tests -eq 0 && test $$linted -eq 0

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
# under a held xmin horizon, REPEATABLE READ readers, overload, a PostgreSQL restart, a killed worker and cut
# connections, 10 minutes a phase, on a PostgreSQL cluster of its own with production's defaults (autovacuum on;
# bench/endurance/cluster.py). `make endurance` alone measures every system at every rate: about six hours, on a quiet
# machine. Each system's run at each rate is stored as one part in docs/endurance/parts/ as soon as it ends (a later
# run of the same pair replaces it), and docs/endurance.md, its plots and results.json in docs/endurance/ are built
# from every part there; so a session shorter than that measures it in parts, one system and rate a run (about 1¼–1½
# hours each), until the report lists none missing:
#   make endurance ENDURANCE_ARGS="--system queueflow --rate 1000"
#   make endurance ENDURANCE_ARGS="--report-only"     # the report again from the parts, measuring nothing
# Not part of `make test`, which runs its smoke profile (tests/bench/test_endurance_smoke.py); `ENDURANCE_PROFILE=short`
# holds 2 minutes.
ENDURANCE_PROFILE ?= full
ENDURANCE_ARGS ?=
endurance: $(INSTALLED) debs
	$(BIN)/python -m bench.endurance --profile $(ENDURANCE_PROFILE) $(ENDURANCE_ARGS)

spec: $(INSTALLED)
	$(BIN)/queueflow spec

# After a change of spec/openapi.json: regenerate every SDK's generated code (commit the result; tests fail on
# drift) and check what is written by hand against the spec.
sdks: sdk-python sdk-typescript

# The Python SDK has no generated code (sdks/python/README.md says why): this names each route, request field and
# public type of it that the spec no longer matches.
sdk-python: $(INSTALLED)
	$(BIN)/pytest -n 0 -q -p no:cacheprovider tests/sdk/test_calls_match_spec.py tests/sdk/test_types_match_spec.py

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
