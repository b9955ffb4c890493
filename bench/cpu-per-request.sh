#!/usr/bin/env bash
# Server CPU per request, side by side: lather's echo (and, with OLD_LATHER, an earlier
# lather build) and gSOAP 2.8's echo, interleaved, at fixed offered rates (open loop,
# `lather-bench http --rate R --server-pid PID`) and saturated with wrk (Debian's
# package; the server's CPU read from /proc/PID/stat before and after).
#
# Prints one table: server, load, req/s, p50/p99, server CPU µs per request.
#
# Environment: RATES="5000 20000", DURATION=10, WARMUP=2, CONNECTIONS=32, ROUNDS=2,
# WRK_THREADS=2, LATHER (default target/release/lather), OLD_LATHER (optional: another
# lather binary to compare, e.g. a build of an earlier commit), SKIP_BUILD=1,
# SKIP_GSOAP=1.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

bench_defaults
RATES="${RATES:-5000 20000}"
WRK_THREADS="${WRK_THREADS:-2}"
command -v wrk >/dev/null 2>&1 || die "wrk not found (apt-get install -y wrk)"
build_lather
[ -x "$LATHER" ] || die "$LATHER not found"
out_dir="$(results_dir cpu-per-request)"
clk_tck="$(getconf CLK_TCK 2>/dev/null || echo 100)"

declare -A url pid
start_lather() { # NAME BINARY
    local port config
    port="$(free_port)"
    config="$out_dir/$1.toml"
    # access_log = false (where the build knows it): a log line per request would slow
    # the measured server.
    printf '[server]\n%s\nlisten = "127.0.0.1:%s"\n\n[[service]]\nname = "echo"\npath = "/echo"\nbuiltin = "echo"\n' \
        "$(access_log_off "$2")" "$port" >"$config"
    start_bg "$out_dir/$1.log" "$2" serve --config "$config"
    pid[$1]=$bg_pid
    wait_for "$1" "${pid[$1]}" "$out_dir/$1.log" 10 health_ok "$port"
    url[$1]="http://127.0.0.1:$port/echo"
    verify_echo "$1" "${url[$1]}" "$out_dir/probe-$1.json"
}
servers=(lather)
start_lather lather "$LATHER"
if [ -n "${OLD_LATHER:-}" ]; then
    start_lather lather-old "$OLD_LATHER"
    servers+=(lather-old)
fi
if [ "${SKIP_GSOAP:-0}" != "1" ]; then
    gsoap_bin="$("$here/gsoap/build.sh")"
    port="$(free_port)"
    start_bg "$out_dir/gsoap.log" "$gsoap_bin" "$port"
    pid[gsoap]=$bg_pid
    wait_for gSOAP "${pid[gsoap]}" "$out_dir/gsoap.log" 10 port_open "$port"
    url[gsoap]="http://127.0.0.1:$port/"
    verify_echo gSOAP "${url[gsoap]}" "$out_dir/probe-gsoap.json"
    servers+=(gsoap)
fi


wrk_lua="$(echo_wrk_script "$out_dir")"

table="$out_dir/table.md"
{
    echo "| round | server | load | req/s | p50 ms | p99 ms | server CPU µs/request |"
    echo "|---|---|---|---:|---:|---:|---:|"
} >"$table"
for ((round = 1; round <= ROUNDS; round++)); do
    for rate in $RATES; do
        for s in "${servers[@]}"; do
            json="$out_dir/$s-$rate-$round.json"
            bench_cmd "${url[$s]}" --connections "$CONNECTIONS" --rate "$rate" \
                --duration "$DURATION" --warmup "$WARMUP" --server-pid "${pid[$s]}" \
                --quiet --json "$json" >/dev/null
            printf '| %s | %s | %s/s open loop | %s | %s | %s | %s |\n' "$round" "$s" "$rate" \
                "$(json_num "$json" rps | xargs printf '%.0f')" \
                "$(json_num "$json" p50 | awk '{ printf "%.3f", $1 / 1000 }')" \
                "$(json_num "$json" p99 | awk '{ printf "%.3f", $1 / 1000 }')" \
                "$(json_num "$json" cpu_us_per_request | xargs printf '%.1f')" >>"$table"
        done
    done
    for s in "${servers[@]}"; do
        before="$(cpu_ticks "${pid[$s]}")"
        wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$wrk_lua" "${url[$s]}" \
            >"$out_dir/wrk-$s-$round.txt"
        after="$(cpu_ticks "${pid[$s]}")"
        reqs="$(awk '/requests in/ { print $1 }' "$out_dir/wrk-$s-$round.txt")"
        rps="$(awk '/Requests\/sec/ { printf "%.0f", $2 }' "$out_dir/wrk-$s-$round.txt")"
        p50="$(awk '$1 == "50%" { print $2 }' "$out_dir/wrk-$s-$round.txt")"
        p99="$(awk '$1 == "99%" { print $2 }' "$out_dir/wrk-$s-$round.txt")"
        cpu="$(awk -v t=$((after - before)) -v hz="$clk_tck" -v n="$reqs" 'BEGIN { printf "%.1f", t / hz * 1e6 / n }')"
        printf '| %s | %s | wrk -t%s -c%s (saturated) | %s | %s | %s | %s |\n' "$round" "$s" \
            "$WRK_THREADS" "$CONNECTIONS" "$rps" "$p50" "$p99" "$cpu" >>"$table"
    done
done
log "results in $out_dir"
cat "$table"
