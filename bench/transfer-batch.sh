#!/usr/bin/env bash
# Transfer batching (issue 13, item 3b): a lather gateway to a lather echo upstream (the
# light 3-handler chain: monitor | wsa | digest, 1 round), /plain sending each request
# alone, /batched gathering them (batch_upstream, batch_max_items = ITEMS, batch_wait_ms =
# WAIT_MS). lather-bench closed loop with CONNECTIONS connections, ROUNDS rounds
# interleaved; client req/s and p50/p99, the upstream's requests per client request, and
# the CPU of gateway + upstream per client request (/proc/PID/stat).
#
# Environment: CONNECTIONS=64 ITEMS=10 WAIT_MS=2 ROUNDS=3 DURATION=5 SKIP_BUILD=1
# Results: target/bench-results/transfer-batch-<timestamp>/ (configs, logs, reports, table.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

CONNECTIONS="${CONNECTIONS:-64}"
ITEMS="${ITEMS:-10}"
WAIT_MS="${WAIT_MS:-2}"
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-5}"
LATHER="${LATHER:-$repo/target/release/lather}"
LATHER_BENCH="${LATHER_BENCH:-$repo/target/release/lather-bench}"

build_lather
out="$(results_dir transfer-batch)"
log "results in $out"
up="$(free_port)"
cat >"$out/upstream.toml" <<TOML
[server]
# Off while measuring throughput: a log line per request costs more than an echo.
access_log = false
listen = "127.0.0.1:$up"

[handlers.mon]
kind = "monitor"

[handlers.addressing]
kind = "wsa"

[handlers.hash]
kind = "digest"
rounds = 1

[[service]]
name = "echo"
path = "/echo"
builtin = "echo"
request = [["mon"], ["addressing"], ["hash"]]
TOML
start_bg "$out/upstream.log" "$LATHER" serve --config "$out/upstream.toml"
up_pid=$bg_pid
wait_for upstream "$up_pid" "$out/upstream.log" 20 health_ok "$up"
port="$(free_port)"
cat >"$out/gateway.toml" <<TOML
[server]
# Off while measuring throughput: a log line per request costs more than an echo.
access_log = false
listen = "127.0.0.1:$port"

[[service]]
name = "plain"
path = "/plain"
upstream = ["http://127.0.0.1:$up/echo"]

[[service]]
name = "batched"
path = "/batched"
upstream = ["http://127.0.0.1:$up/echo"]
batch_upstream = true
batch_max_items = $ITEMS
batch_wait_ms = $WAIT_MS
TOML
start_bg "$out/gateway.log" "$LATHER" serve --config "$out/gateway.toml"
gw_pid=$bg_pid
wait_for gateway "$gw_pid" "$out/gateway.log" 20 health_ok "$port"

hz=$(getconf CLK_TCK)
declare -A rps p50 p99 per cpu
for round in $(seq 1 "$ROUNDS"); do
    for v in plain batched; do
        log "round $round: /$v"
        u0=$(metric_value "$up" 'lather_requests_total{service="echo",code="200"}')
        c0=$(( $(cpu_ticks "$gw_pid") + $(cpu_ticks "$up_pid") ))
        json="$out/$v-$round.json"
        "$LATHER_BENCH" http "http://127.0.0.1:$port/$v" --connections "$CONNECTIONS" --duration "$DURATION" \
            --warmup 0 --soap 1.2 --expect urn:lather:echo --quiet --json "$json" >/dev/null
        c1=$(( $(cpu_ticks "$gw_pid") + $(cpu_ticks "$up_pid") ))
        u1=$(metric_value "$up" 'lather_requests_total{service="echo",code="200"}')
        n=$(json_num "$json" requests_total)
        rps[$v,$round]=$(json_num "$json" rps)
        p50[$v,$round]=$(json_num "$json" p50)
        p99[$v,$round]=$(json_num "$json" p99)
        per[$v,$round]=$(awk -v a="$u0" -v b="$u1" -v n="$n" 'BEGIN {printf "%.3f", (b - a) / n}')
        cpu[$v,$round]=$(awk -v t=$((c1 - c0)) -v hz="$hz" -v n="$n" 'BEGIN {printf "%.1f", t / hz * 1e6 / n}')
    done
done
med() { for r in $(seq 1 "$ROUNDS"); do eval "echo \${$1[$2,$r]}"; done | median; }
{
    echo "| gateway | client req/s | p50 ms | p99 ms | upstream requests per client request | CPU µs per client request (gateway + upstream) | × plain req/s |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    for v in plain batched; do
        ratio=$(for r in $(seq 1 "$ROUNDS"); do awk -v a="${rps[$v,$r]}" -v b="${rps[plain,$r]}" 'BEGIN {printf "%.3f\n", a / b}'; done | median)
        label="each request alone"
        [ "$v" = batched ] && label="batched ($ITEMS items / $WAIT_MS ms)"
        printf '| %s | %.0f | %.2f | %.2f | %s | %s | %s |\n' "$label" "$(med rps "$v")" \
            "$(awk -v v="$(med p50 "$v")" 'BEGIN {print v / 1000}')" "$(awk -v v="$(med p99 "$v")" 'BEGIN {print v / 1000}')" \
            "$(med per "$v")" "$(med cpu "$v")" "$ratio"
    done
} >"$out/table.md"
cat "$out/table.md"
log "results in $out"
