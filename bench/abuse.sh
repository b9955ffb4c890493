#!/usr/bin/env bash
# The full form of `lather-bench abuse`: starts `lather serve --config bench/abuse.toml`
# on a free port, replays issue 10's hostile cases against it (RSS, CPU, probe latency
# for each; see docs/benchmarks.md, "Abuse") and saves the table to
# docs/bench/history/abuse-DATE.md. Exits non-zero when an expectation is not met.
#
# Environment: LATHER (default target/release/lather), LATHER_BENCH (default
# target/release/lather-bench), SKIP_BUILD=1, SERVER_CPUS,
# CASES (e.g. "a,c"; default all), QUICK=1 (the CI form).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

bench_defaults
build_lather
[ -x "$LATHER" ] || die "$LATHER not found (build lather-cli or set LATHER)"
[ -x "$LATHER_BENCH" ] || die "$LATHER_BENCH not found (build lather-bench or set LATHER_BENCH)"

# Case g opens 5 000 idle sockets and case e holds 10 000 deliveries: raise the
# descriptor limit as far as allowed (the server inherits it).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
log "open files limit: $(ulimit -n)"

out_dir="$(results_dir abuse)"
port="$(free_port)"
config="$out_dir/abuse.toml"
sed "s/^listen = .*/listen = \"127.0.0.1:$port\"/" "$repo/bench/abuse.toml" >"$config"

cd "$repo"
start_bg "$out_dir/server.log" "$LATHER" serve --config "$config"
server_pid=$bg_pid
wait_for "lather serve" "$server_pid" "$out_dir/server.log" 20 health_ok "$port"

history="$repo/docs/bench/history/abuse-$(date -u +%Y-%m-%d).md"
args=(--target "http://127.0.0.1:$port" --server-pid "$server_pid" --markdown "$out_dir/abuse.md")
[ "${QUICK:-0}" = "1" ] && args+=(--quick)
[ -n "${CASES:-}" ] && args+=(--cases "$CASES")
rc=0
"$LATHER_BENCH" abuse "${args[@]}" || rc=$?
mkdir -p "$(dirname "$history")"
{
    echo "# lather-bench abuse — $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    echo "Host: $(uname -srm), $(nproc) cores; lather $(git rev-parse --short HEAD 2>/dev/null || echo '?')."
    echo
    cat "$out_dir/abuse.md"
} >"$history"
log "table saved to $history (exit $rc)"
exit "$rc"
