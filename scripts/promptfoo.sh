# shellcheck shell=bash
# promptfoo for the exported-judge parity tests (tests/prompt_package/test_exported_parity.py).
#
# Node and npm come from Debian (installed with apt-get when missing and we are root);
# promptfoo from the npm registry, pinned. 0.121.20 is the newest promptfoo that runs on
# Debian's Node 20 (0.122 and later need Node >= 22.22). Installed once per machine into
# ${XDG_CACHE_HOME:-~/.cache}/gradercal/promptfoo-VERSION (optional packages left out:
# they would try to download browsers and ONNX binaries from outside the registry) and
# reused by later runs. `promptfoo_setup` exports GRADERCAL_PROMPTFOO (the executable)
# and keeps promptfoo's state (database, logs, cache, temporary files) out of $HOME and
# its update check and telemetry off.
PROMPTFOO_VERSION=0.121.20

promptfoo_setup() {
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            echo "== installing Node.js and npm (Debian packages)"
            apt-get update -qq >/dev/null && \
                DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null || return 1
        else
            echo "node/npm not found: the promptfoo parity test will be skipped" >&2
            return 1
        fi
    fi
    local root="${XDG_CACHE_HOME:-$HOME/.cache}/gradercal/promptfoo-$PROMPTFOO_VERSION"
    local exe="$root/node_modules/.bin/promptfoo"
    export PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1
    export PROMPTFOO_DISABLE_RUNTIME_WARNINGS=1 PROMPTFOO_DISABLE_SHARING=1
    export PROMPTFOO_DISABLE_REMOTE_GENERATION=1
    # promptfoo's own state (database, logs, cache) stays beside it, never in ~/.promptfoo
    export PROMPTFOO_CONFIG_DIR="$root/state" PROMPTFOO_LOG_DIR="$root/state/logs"
    export PROMPTFOO_CACHE_PATH="$root/state/cache"
    if [ ! -x "$exe" ]; then
        echo "== installing promptfoo $PROMPTFOO_VERSION (npm)"
        mkdir -p "$root"
        [ -f "$root/package.json" ] || echo '{"name": "gradercal-promptfoo", "private": true}' > "$root/package.json"
        (cd "$root" && npm install --no-audit --no-fund --omit=optional --save-exact \
            --loglevel=error "promptfoo@$PROMPTFOO_VERSION" >/dev/null) || return 1
        # Its database driver's native part is an optional package per platform: add
        # this platform's (from the registry) without the other optional downloads.
        local native
        native=$(cd "$root" && node -p "const d = require('./node_modules/libsql/package.json');
            const k = Object.keys(d.optionalDependencies || {}).find(
                (n) => n.endsWith(process.platform + '-' + process.arch + '-gnu'));
            k ? k + '@' + d.optionalDependencies[k] : ''") || return 1
        if [ -n "$native" ]; then
            (cd "$root" && npm install --no-audit --no-fund --omit=optional --save-exact \
                --loglevel=error "$native" >/dev/null) || return 1
        fi
        "$exe" --version >/dev/null 2>&1 || { rm -rf "$root"; return 1; }
    fi
    export GRADERCAL_PROMPTFOO="$exe"
}
