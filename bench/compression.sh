#!/usr/bin/env bash
# Response compression (issue 13, item 2): the echo service answered plain or gzip-compressed
# for a client that sends `Accept-Encoding: gzip`, at answer sizes below and above the
# threshold (`[server] compress_min_bytes`, default 1024): requests/s, server CPU per request
# (/proc/PID/stat, lather-bench --server-pid) and the answer's bytes on the wire (the
# server's lather_response_bytes_total per request). Two servers side by side: `on` (the
# default) and `off` (compress_responses = false); ROUNDS rounds, interleaved, medians.
#
# Environment: SIZES="200 800 4000 16000 64000" (text bytes in the echo request; the answer
#   is about 230 bytes longer) ROUNDS=3 DURATION=5 CONNECTIONS=16 SKIP_BUILD=1
# Results: target/bench-results/compression-<timestamp>/ (configs, logs, reports, table.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

SIZES="${SIZES:-200 800 4000 16000 64000}"
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-5}"
CONNECTIONS="${CONNECTIONS:-16}"
LATHER="${LATHER:-$repo/target/release/lather}"
LATHER_BENCH="${LATHER_BENCH:-$repo/target/release/lather-bench}"
bench_pids=()

build_lather
out="$(results_dir compression)"
log "results in $out"

declare -A port pid
for mode in on off; do
    port[$mode]="$(free_port)"
    flag=true
    [ "$mode" = off ] && flag=false
    # access_log = false: a log line per request would slow the measured server.
    printf '[server]\naccess_log = false\nlisten = "127.0.0.1:%s"\ncompress_responses = %s\n\n[[service]]\nname = "echo"\npath = "/echo"\nbuiltin = "echo"\n' \
        "${port[$mode]}" "$flag" >"$out/$mode.toml"
    start_bg "$out/$mode.log" "$LATHER" serve --config "$out/$mode.toml"
    pid[$mode]=$bg_pid
    wait_for "$mode" "$bg_pid" "$out/$mode.log" 20 health_ok "${port[$mode]}"
done


declare -A rps cpu bytes
for round in $(seq 1 "$ROUNDS"); do
    for size in $SIZES; do
        for mode in on off; do
            p=${port[$mode]}
            b0=$(metric_value "$p" 'lather_response_bytes_total{service="echo"}')
            n0=$(metric_value "$p" 'lather_requests_total{service="echo",code="200"}')
            log "round $round: $size bytes, compression $mode"
            "$LATHER_BENCH" http "http://127.0.0.1:$p/echo" --connections "$CONNECTIONS" \
                --duration "$DURATION" --warmup 1 --payload-bytes "$size" --soap 1.2 \
                --header 'Accept-Encoding: gzip' --server-pid "${pid[$mode]}" \
                --quiet --json "$out/$size-$mode-$round.json" >/dev/null
            b1=$(metric_value "$p" 'lather_response_bytes_total{service="echo"}')
            n1=$(metric_value "$p" 'lather_requests_total{service="echo",code="200"}')
            rps[$size,$mode,$round]=$(json_num "$out/$size-$mode-$round.json" rps)
            cpu[$size,$mode,$round]=$(json_num "$out/$size-$mode-$round.json" cpu_us_per_request)
            bytes[$size,$mode,$round]=$(awk -v a="$b0" -v b="$b1" -v m="$n0" -v n="$n1" 'BEGIN {printf "%.0f", (b - a) / (n - m)}')
        done
    done
done
{
    echo "| text bytes | answer bytes plain → gzip | req/s off | req/s on | on/off | CPU µs/req off | CPU µs/req on |"
    echo "|---:|---|---:|---:|---:|---:|---:|"
    for size in $SIZES; do
        r_off=$(for r in $(seq 1 "$ROUNDS"); do echo "${rps[$size,off,$r]}"; done | median)
        r_on=$(for r in $(seq 1 "$ROUNDS"); do echo "${rps[$size,on,$r]}"; done | median)
        c_off=$(for r in $(seq 1 "$ROUNDS"); do echo "${cpu[$size,off,$r]}"; done | median)
        c_on=$(for r in $(seq 1 "$ROUNDS"); do echo "${cpu[$size,on,$r]}"; done | median)
        y_off=$(for r in $(seq 1 "$ROUNDS"); do echo "${bytes[$size,off,$r]}"; done | median)
        y_on=$(for r in $(seq 1 "$ROUNDS"); do echo "${bytes[$size,on,$r]}"; done | median)
        ratios=$(for r in $(seq 1 "$ROUNDS"); do awk -v a="${rps[$size,on,$r]}" -v b="${rps[$size,off,$r]}" 'BEGIN {printf "%.3f\n", a / b}'; done | median)
        printf '| %s | %s → %s | %.0f | %.0f | %.3f | %.1f | %.1f |\n' "$size" "$y_off" "$y_on" "$r_off" "$r_on" "$ratios" "$c_off" "$c_on"
    done
} >"$out/table.md"
cat "$out/table.md"
