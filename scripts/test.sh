#!/usr/bin/env bash
# Install everything and run the whole test suite with its quality gates:
# ruff (lint + format check), mypy --strict on the whole gradercal package, then pytest (which also
# checks the import-linter layering contracts) with strict markers on SQLite and on a real PostgreSQL server.
# Exits non-zero on any failure (pytest's "no tests ran" included).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase says when it starts and how long the run has taken so far (CI logs show
# where the time goes).
phase() { echo "== $1 ($(date +%T), ${SECONDS}s in)"; }

phase "install"
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
pipi=(.venv/bin/python -m pip install -q --disable-pip-version-check --no-compile)
# The dependencies come from the locks (requirements/*.lock, every file pinned with its sha256,
# written by scripts/lock.sh): the suite runs on the same versions on any machine, any day.
# GRADERCAL_DEPS=newest installs the newest versions the index serves instead (the locks are
# not touched): how a lock refresh is proven before it is committed (benchmarks/README.md).
if [ "${GRADERCAL_DEPS:-locked}" = newest ]; then
    echo "dependencies: the newest versions (GRADERCAL_DEPS=newest), not the locks"
    "${pipi[@]}" --upgrade --upgrade-strategy eager -e ".[dev]"
else
    "${pipi[@]}" --require-hashes -r requirements/dev.lock
    "${pipi[@]}" --no-deps -e .
fi
# irrCAC, the independent reference of tests/stats/test_stats_irrcac.py: pure Python on numpy,
# pandas and scipy, but its metadata pins scipy==1.12.0 and pandas<3 (which would
# downgrade the whole environment), so it is installed without its declared dependencies.
"${pipi[@]}" --no-deps --require-hashes -r requirements/irrcac.lock
.venv/bin/python -c 'from importlib.metadata import version as v
print("dependencies:", ", ".join(f"{p} {v(p)}" for p in ("numpy", "pandas", "scipy", "scikit-learn", "PySide6-Essentials", "SQLAlchemy")))'
# pip compiles the installed packages' bytecode one file after another (about 55 s of a
# fresh install here); compileall on every core makes the same files in about 30 s.
# Some packages ship files that do not compile on purpose (test data, other Pythons'
# syntax): pip skips them silently, and so does this (-qq, exit status ignored). The
# packages' own test suites (a quarter of the source, never imported here) are left out:
# 26 s -> 19 s on the 2-core machine (a module there that something imports after all is
# compiled when first imported, as usual).
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
.venv/bin/python -m compileall -qq -j 0 -x '/tests?/' "$site" >/dev/null 2>&1 || true
# gradercal is installed editable, so pip compiles none of it, and where
# PYTHONDONTWRITEBYTECODE is set (as on the CI machine) no process writes its bytecode
# either: every Python process the suite starts (each dashboard worker, each CLI run in
# a subprocess, each test worker) would compile the modules it imports again, 0.5–1 s
# of CPU apiece. Compiled once here (about a second); an edited file's stale bytecode
# is ignored by Python and compiled again, as usual.
.venv/bin/python -m compileall -q -j 0 gradercal tests

# shellcheck source=scripts/promptfoo.sh
source scripts/promptfoo.sh
if ! promptfoo_setup; then
    if [ -n "${CI:-}" ]; then
        echo "promptfoo is required here but could not be installed" >&2
        exit 1
    fi
fi
if [ -n "${CI:-}" ]; then export GRADERCAL_REQUIRE_PROMPTFOO=1; fi

# shellcheck source=scripts/postgres.sh
source scripts/postgres.sh
if pg_test_start; then
    trap pg_test_stop EXIT
elif [ -n "${CI:-}" ] || [ -n "${GRADERCAL_REQUIRE_PG:-}" ]; then
    echo "PostgreSQL is required here but could not be started" >&2
    exit 1
fi
if [ -n "${CI:-}" ]; then export GRADERCAL_REQUIRE_PG=1; fi

phase "ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
phase "mypy --strict (every package of gradercal)"
# Its incremental cache lives per machine, beside promptfoo's, so a fresh clone does not
# check pandas-stubs and the rest from nothing (about a minute): mypy rechecks every
# module whose source hash differs from the cached one, and writes entries atomically.
.venv/bin/python -m mypy --cache-dir "${XDG_CACHE_HOME:-$HOME/.cache}/gradercal/mypy" -p gradercal
# pytest-xdist: one worker process per core (GRADERCAL_TEST_WORKERS overrides it; 0 runs
# in this process, and so does `-n 0` among the arguments, which come after and win).
# Each worker has its own temporary folders, PostgreSQL databases and Qt application;
# worksteal hands each worker half of the tests in order (module fixtures built once per
# worker) and lets an idle one take tests from the other's end, so both finish together.
workers=${GRADERCAL_TEST_WORKERS:-$(nproc 2>/dev/null || echo 2)}
phase "pytest ($workers workers)"
export QT_QPA_PLATFORM=offscreen
set +e
# --durations: the slowest tests are printed at the end (where CI time goes, issue #18).
.venv/bin/python -m pytest -n "$workers" --dist worksteal --durations=40 "$@"
status=$?
set -e
phase "done"
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: failing" >&2
    exit 1
fi
exit "$status"
