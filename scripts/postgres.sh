#!/usr/bin/env bash
# Start a throwaway PostgreSQL server on 127.0.0.1 for the test suite.
#   source scripts/postgres.sh   → exports GRADERCAL_TEST_PG_URL (admin URL) and PG_TEST_DIR
#   pg_test_stop                 → stops it and removes its files
# Installs Debian's postgresql package when the server binaries are missing and we are root.
# Not sourced by users; scripts/test.sh and .ci/run call it.

pg_bin_dir() {
    local d
    for d in /usr/lib/postgresql/*/bin; do
        [ -x "$d/postgres" ] && { echo "$d"; return 0; }
    done
    return 1
}

pg_test_start() {
    local bindir port dir as=()
    if ! bindir=$(pg_bin_dir); then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "postgres: installing Debian's postgresql package" >&2
            apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive \
                apt-get install -y -qq --no-install-recommends postgresql >/dev/null || return 1
            bindir=$(pg_bin_dir) || return 1
        else
            echo "postgres: no server binaries (apt-get install postgresql); PostgreSQL tests will be skipped" >&2
            return 1
        fi
    fi
    port=${GRADERCAL_TEST_PG_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
    dir=$(mktemp -d /tmp/gradercal-pg.XXXXXX)
    if [ "$(id -u)" = 0 ]; then
        chown postgres: "$dir"
        as=(runuser -u postgres --)
    fi
    "${as[@]}" "$bindir/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; return 1; }
    "${as[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null \
        || { cat "$dir/server.log" >&2; return 1; }
    export PG_TEST_DIR=$dir PG_TEST_BIN=$bindir
    export GRADERCAL_TEST_PG_URL="postgresql+psycopg://postgres@127.0.0.1:$port/postgres"
    echo "postgres: test server on 127.0.0.1:$port ($("$bindir/postgres" --version))" >&2
}

pg_test_stop() {
    [ -n "${PG_TEST_DIR:-}" ] || return 0
    local as=()
    [ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
    "${as[@]}" "$PG_TEST_BIN/pg_ctl" -D "$PG_TEST_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$PG_TEST_DIR"
    unset PG_TEST_DIR
}
