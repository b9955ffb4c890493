#!/usr/bin/env bash
# Where CPU-bound handlers run: five `digest` handlers in one stage, every call handed to
# the CPU pool (LATHER_CPU_INLINE_MICROS=0) vs the default (calls measured cheaper than
# 50 µs stay on the message's task). Interleaved rounds, closed loop, one server per run.
#
# Environment: ROUNDS_LIST="10 100" (SHA-256 rounds per handler), DURATION, WARMUP,
# CONNECTIONS, ROUNDS (pairs of runs), LATHER, SKIP_BUILD — as the other bench scripts.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

bench_defaults
ROUNDS_LIST="${ROUNDS_LIST:-10 100}"
out_dir="$(results_dir digest-placement)"
build_lather

# run_one ROUNDS INLINE_MICROS : prints the run's requests/s.
run_one() {
    local rounds=$1 inline=$2 port config i
    port="$(free_port)"
    config="$out_dir/r$rounds-inline$inline.toml"
    {
        # access_log = false: a log line per request would slow the measured server.
        printf '[server]\naccess_log = false\nlisten = "127.0.0.1:%s"\n' "$port"
        printf '[[service]]\nname = "echo"\npath = "/echo"\nbuiltin = "echo"\n'
        printf 'request = [["d1", "d2", "d3", "d4", "d5"]]\n'
        for i in 1 2 3 4 5; do
            printf '[handlers.d%s]\nkind = "digest"\nrounds = %s\n' "$i" "$rounds"
        done
    } >"$config"
    LATHER_CPU_INLINE_MICROS="$inline" start_bg "$out_dir/server.log" \
        "$LATHER" --log-level warn serve --config "$config"
    wait_for lather "$bg_pid" "$out_dir/server.log" 10 health_ok "$port"
    bench_cmd "http://127.0.0.1:$port/echo" --connections "$CONNECTIONS" \
        --duration "$DURATION" --warmup "$WARMUP" --quiet \
        --json "$out_dir/r$rounds-inline$inline.json" >/dev/null
    stop_all
    json_num "$out_dir/r$rounds-inline$inline.json" rps
}

printf '%-7s %-5s %14s %14s %8s\n' rounds run "pool (0 µs)" "adaptive (50)" ratio
for rounds in $ROUNDS_LIST; do
    for ((round = 1; round <= ROUNDS; round++)); do
        pool="$(run_one "$rounds" 0)"
        adaptive="$(run_one "$rounds" 50)"
        printf '%-7s %-5s %14.1f %14.1f %8s\n' "$rounds" "$round" "$pool" "$adaptive" \
            "$(ratio "$adaptive" "$pool")"
    done
done
