#!/usr/bin/env bash
# Refresh the dependency locks that scripts/test.sh installs from (requirements/*.lock).
#   bash scripts/lock.sh          → re-resolves every dependency to the newest versions the
#                                   package index serves today, with the sha256 of every file
# Then run `bash scripts/test.sh` (which installs exactly the new lock) and commit the locks
# with the test result. `GRADERCAL_DEPS=newest bash scripts/test.sh` runs the suite on the
# newest versions without touching the locks.
#
# The resolver is uv (a throwaway copy in a temporary virtualenv, nothing installed for good):
# `uv pip compile --universal` writes one lock for every platform and Python >= 3.11, each
# pinned file with its hashes, so `pip install --require-hashes` refuses anything else.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
tool=$(mktemp -d)
trap 'rm -rf "$tool"' EXIT
"$PY" -m venv "$tool/venv"
"$tool/venv/bin/python" -m pip install -q --disable-pip-version-check "uv>=0.9" 2>/dev/null
uv=("$tool/venv/bin/uv" pip compile --quiet --universal --python-version 3.11 --generate-hashes
    --no-header)
mkdir -p requirements
# everything the suite needs: gradercal's dependencies and its dev extra
"${uv[@]}" pyproject.toml --extra dev -o requirements/dev.lock
# irrCAC, the independent reference of tests/stats/test_stats_irrcac.py: its metadata pins
# scipy==1.12.0 and pandas<3, so it is installed without its declared dependencies
echo "irrcac==0.4.4" >"$tool/irrcac.in"
"${uv[@]}" --no-deps --no-annotate "$tool/irrcac.in" -o requirements/irrcac.lock
for f in requirements/dev.lock requirements/irrcac.lock; do
    sed -i "1i # Written by scripts/lock.sh on $(date -u +%F); do not edit by hand." "$f"
done
echo "locks written: requirements/dev.lock ($(grep -c '==' requirements/dev.lock) pins), requirements/irrcac.lock"
