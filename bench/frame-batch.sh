#!/usr/bin/env bash
# Transfer batching of remote-stage traffic (issue 13, item 3b): requests/s through an echo
# service whose one handler runs on a `lather worker` over NATS — MODE=call (request/reply
# remote `logging`) or MODE=oneway (a oneway remote `logging`, handed over through the
# JetStream work queue) — with `[nats] batch_max_items` = each of SIZES (1: each call its own
# NATS message) and `batch_wait_ms` = WAIT_MS. wrk -t1, CONNECTIONS connections, ROUNDS
# rounds interleaved; CPU per request of the three processes (lather serve, lather worker,
# nats-server) from /proc/PID/stat over each run; the share of calls that went batched from
# /metrics.
#
# Environment: MODE=call SIZES="1 4 16" WAIT_MS=1 ROUNDS=3 DURATION=5 CONNECTIONS=64
#              WORKER_CONCURRENCY=64 SKIP_BUILD=1
# Results: target/bench-results/frame-batch-<timestamp>/ (configs, logs, wrk output, table.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

MODE="${MODE:-call}"
SIZES="${SIZES:-1 4 16}"
WAIT_MS="${WAIT_MS:-1}"
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-5}"
CONNECTIONS="${CONNECTIONS:-64}"
WORKER_CONCURRENCY="${WORKER_CONCURRENCY:-64}"
LATHER="${LATHER:-$repo/target/release/lather}"
command -v wrk >/dev/null 2>&1 || die "wrk not found (apt-get install -y wrk)"
command -v nats-server >/dev/null || die "nats-server not found (apt-get install -y nats-server)"
case "$MODE" in
    call) oneway=false; counter=lather_remote_batched_calls_total ;;
    oneway) oneway=true; counter=lather_remote_oneway_batched_total ;;
    *) die "MODE must be call or oneway" ;;
esac

build_lather
out="$(results_dir "frame-batch-$MODE")"
log "results in $out"
mkdir -p "$out/jetstream"
start_nats "$out/nats.log" -js -sd "$out/jetstream"

# config FILE PORT ITEMS
config() {
    cat >"$1" <<TOML
[server]
# Off while measuring throughput: a log line per request costs more than an echo.
access_log = false
listen = "127.0.0.1:$2"
max_in_flight = 4096
queue_capacity = 4096

[nats]
url = "nats://127.0.0.1:$nats_port"
batch_max_items = $3
batch_wait_ms = $WAIT_MS

[handlers.h]
kind = "logging"
placement = "remote"
oneway = $oneway
timeout_ms = 5000

[[service]]
name = "echo"
path = "/echo"
builtin = "echo"
request = [["h"]]
TOML
}

config "$out/worker.toml" "$(free_port)" 1
start_bg "$out/worker.log" "$LATHER" --log-level warn worker --config "$out/worker.toml" \
    --handlers h --concurrency "$WORKER_CONCURRENCY"
worker_pid=$bg_pid
sleep 0.5

body='<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><ns:echo xmlns:ns="urn:lather:echo"><text>xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx</text></ns:echo></soap:Body></soap:Envelope>'
printf '%s' "$body" >"$out/body.xml"
cat >"$out/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "text/xml; charset=utf-8"
wrk.headers["SOAPAction"] = '"urn:lather:echo#echo"'
local f = io.open("$out/body.xml", "rb"); wrk.body = f:read("*a"); f:close()
LUA
hz=$(getconf CLK_TCK)

declare -A rps cpu share gain
for round in $(seq 1 "$ROUNDS"); do
    for n in $SIZES; do
        log "round $round: batch_max_items = $n"
        port="$(free_port)"
        config "$out/serve-$n.toml" "$port" "$n"
        start_bg "$out/serve-$n-$round.log" "$LATHER" --log-level warn serve --config "$out/serve-$n.toml"
        pid=$bg_pid
        wait_for lather "$pid" "$out/serve-$n-$round.log" 20 health_ok "$port"
        url="http://127.0.0.1:$port/echo"
        # Warm up (connections, the stream, the first batches).
        wrk -t1 -c"$CONNECTIONS" -d1s -s "$out/post.lua" "$url" >/dev/null
        before=$(($(cpu_ticks "$pid") + $(cpu_ticks "$worker_pid") + $(cpu_ticks "$nats_pid")))
        calls_before=$(metric_value "$port" 'lather_remote_calls_total{')
        batched_before=$(metric_value "$port" "$counter{")
        published_before=$(metric_value "$port" 'lather_remote_oneway_published_total{')
        wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -s "$out/post.lua" "$url" >"$out/wrk-$n-$round.txt"
        after=$(($(cpu_ticks "$pid") + $(cpu_ticks "$worker_pid") + $(cpu_ticks "$nats_pid")))
        bad=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$out/wrk-$n-$round.txt")
        [ -z "$bad" ] || die "wrk: $bad answers were not 2xx (batch_max_items $n, round $round)"
        reqs=$(awk '/requests in/ {print $1}' "$out/wrk-$n-$round.txt")
        rps[$n,$round]=$(awk '/Requests\/sec/ {print $2}' "$out/wrk-$n-$round.txt")
        cpu[$n,$round]=$(awk -v t=$((after - before)) -v hz="$hz" -v q="$reqs" 'BEGIN {printf "%.1f", t / hz * 1e6 / q}')
        if [ "$MODE" = call ]; then
            total=$(awk -v a="$(metric_value "$port" 'lather_remote_calls_total{')" -v b="$calls_before" 'BEGIN {print a - b}')
        else
            total=$(awk -v a="$(metric_value "$port" 'lather_remote_oneway_published_total{')" -v b="$published_before" 'BEGIN {print a - b}')
        fi
        batched=$(awk -v a="$(metric_value "$port" "$counter{")" -v b="$batched_before" 'BEGIN {print a - b}')
        share[$n,$round]=$(awk -v b="$batched" -v t="$total" 'BEGIN {printf "%.2f", (t > 0) ? b / t : 0}')
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    done
done
{
    echo "mode: $MODE (remote logging handler, oneway = $oneway), batch_wait_ms = $WAIT_MS, wrk -t1 -c$CONNECTIONS -d${DURATION}s, $ROUNDS rounds, medians"
    echo
    echo "| batch_max_items | requests/s | × unbatched | CPU µs/request (serve + worker + nats-server) | calls sent batched |"
    echo "|---:|---:|---:|---:|---:|"
    for n in $SIZES; do
        first=${SIZES%% *}
        for k in $(seq 1 "$ROUNDS"); do
            gain[$n,$k]=$(awk -v a="${rps[$n,$k]}" -v b="${rps[$first,$k]}" 'BEGIN {printf "%.3f", a / b}')
        done
        printf '| %s | %.0f | %.2f | %s | %s |\n' "$n" "$(median_over rps "$n")" \
            "$(median_over gain "$n")" "$(median_over cpu "$n")" "$(median_over share "$n")"
    done
} >"$out/table.md"
cat "$out/table.md"
log "results in $out"
