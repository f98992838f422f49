#!/usr/bin/env bash
# The README's run command, install step, before and after issue #32: download size and time.
#   bash benchmarks/bench_install.sh OLD_REF "OLD_SPEC" NEW_REF "NEW_SPEC"
#   e.g. bash benchmarks/bench_install.sh 632c6cc '.[all]' HEAD '.'
# Each side: a clean copy of the tree at REF (git archive), a fresh venv
# (`python3 -m venv`), an empty pip cache (`PIP_CACHE_DIR=$(mktemp -d)`), then exactly
# `.venv/bin/pip install -e SPEC`, timed as wall-clock seconds. Download size is the sum of
# the sizes of the distribution files pip chose (its `--report`): a file from a local
# index or --find-links (file:// URL) by its size on disk, one from the network by the
# Content-Length of a HEAD request to its URL (this machine's proxy marks downloads
# uncacheable, so the pip cache cannot be weighed instead).
# Also printed: packages installed and the venv's size on disk.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
side() {
    local ref=$1 spec=$2 work
    work=$(mktemp -d)
    git archive "$ref" | tar -x -C "$work"
    "$PY" -m venv "$work/.venv"
    local cache
    cache=$(mktemp -d)
    local t0 t1
    t0=$(date +%s.%N)
    (cd "$work" && PIP_CACHE_DIR=$cache .venv/bin/pip install -q -e "$spec" --report "$work/report.json")
    t1=$(date +%s.%N)
    "$PY" - "$work/report.json" "$cache" "$work/.venv" "$ref" "$spec" "$t0" "$t1" <<'EOF'
import json, os, sys, urllib.parse, urllib.request
report, cache, venv, ref, spec, t0, t1 = sys.argv[1:]
items = json.load(open(report))["install"]
local = http = 0
for it in items:
    url = it["download_info"]["url"]
    if it["download_info"].get("dir_info"):
        continue  # gradercal itself, from the tree
    if url.startswith("file://"):
        local += os.path.getsize(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
    else:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD")) as r:
            http += int(r.headers["Content-Length"])
def du(p):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(p) for f in fs
               if not os.path.islink(os.path.join(d, f)))
print(f"pip install -e '{spec}' at {ref}: {len(items)} packages, downloaded "
      f"{(http + local) / 1e6:.0f} MB (network {http / 1e6:.0f} MB, local index {local / 1e6:.0f} MB), "
      f"{float(t1) - float(t0):.0f} s, venv {du(venv) / 1e6:.0f} MB on disk")
EOF
    rm -rf "$work" "$cache"
}
side "$1" "$2"
side "$3" "$4"
