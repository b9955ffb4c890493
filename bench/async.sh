#!/usr/bin/env bash
# Asynchronous requests against synchronous ones under a slow service (issue 13, item 8):
# an echo service whose request stage waits SLOW_MS (a `sleep` handler: a slow upstream)
# with `async_replies`, called by lather-bench (closed loop, CONNECTIONS connections)
#   sync:  plain requests, each answered on its connection after the wait;
#   async: requests with a unique wsa:MessageID and a ReplyTo naming a sink (a second
#          lather echo process), answered 202 at once; the answers are then POSTed to the
#          sink, whose request counter gives when the last one arrived.
# Figures: requests/s and p50/p99 as the client sees them, and for async the answers
# delivered per second from the first request to the last delivery.
#
# Environment: SLOW_MS=50 DURATION=5 CONNECTIONS=16 SKIP_BUILD=1
# Results: target/bench-results/async-<timestamp>/ (configs, logs, reports, table.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

SLOW_MS="${SLOW_MS:-50}"
DURATION="${DURATION:-5}"
CONNECTIONS="${CONNECTIONS:-16}"
LATHER="${LATHER:-$repo/target/release/lather}"
LATHER_BENCH="${LATHER_BENCH:-$repo/target/release/lather-bench}"

build_lather
out="$(results_dir async)"
log "results in $out"
sink_port="$(free_port)"
# access_log = false: a log line per request would slow the measured server.
printf '[server]\naccess_log = false\nlisten = "127.0.0.1:%s"\n\n[[service]]\nname = "sink"\npath = "/sink"\nbuiltin = "echo"\n' \
    "$sink_port" >"$out/sink.toml"
start_bg "$out/sink.log" "$LATHER" serve --config "$out/sink.toml"
wait_for sink "$bg_pid" "$out/sink.log" 20 health_ok "$sink_port"
port="$(free_port)"
cat >"$out/lather.toml" <<TOML
[server]
# Off while measuring throughput: a log line per request costs more than an echo.
access_log = false
listen = "127.0.0.1:$port"

[handlers.slow]
kind = "sleep"
millis = $SLOW_MS

[[service]]
name = "echo"
path = "/echo"
builtin = "echo"
request = [["slow"]]
async_replies = true
async_max_pending = 1000000
reply_allow = ["127.0.0.1"]
TOML
start_bg "$out/lather.log" "$LATHER" serve --config "$out/lather.toml"
pid=$bg_pid
wait_for lather "$pid" "$out/lather.log" 20 health_ok "$port"

text=$(head -c 100 /dev/zero | tr '\0' x)
printf '<?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><ns:echo xmlns:ns="urn:lather:echo"><text>%s</text></ns:echo></s:Body></s:Envelope>' \
    "$text" >"$out/sync.xml"
printf '<?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:a="http://www.w3.org/2005/08/addressing"><s:Header><a:MessageID>urn:uuid:MMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMM</a:MessageID><a:ReplyTo><a:Address>http://127.0.0.1:%s/sink</a:Address></a:ReplyTo></s:Header><s:Body><ns:echo xmlns:ns="urn:lather:echo"><text>%s</text></ns:echo></s:Body></s:Envelope>' \
    "$sink_port" "$text" >"$out/async.xml"

log "sync: ${SLOW_MS} ms service, $CONNECTIONS connections"
"$LATHER_BENCH" http "http://127.0.0.1:$port/echo" --connections "$CONNECTIONS" --duration "$DURATION" \
    --warmup 1 --soap 1.2 --body "$out/sync.xml" --expect urn:lather:echo --server-pid "$pid" \
    --quiet --json "$out/sync.json" >/dev/null
before=$(metric_value "$sink_port" 'lather_requests_total{service="sink",code="200"}')
log "async: the same, each request with its own MessageID and a ReplyTo"
started=$(date +%s.%N)
"$LATHER_BENCH" http "http://127.0.0.1:$port/echo" --connections "$CONNECTIONS" --duration "$DURATION" \
    --warmup 0 --soap 1.2 --body "$out/async.xml" --vary MMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMM \
    --server-pid "$pid" --quiet --json "$out/async.json" >/dev/null
accepted=$(json_num "$out/async.json" 202)
[ -n "$accepted" ] || accepted=0
log "async: $accepted accepted; waiting for their answers at the sink"
deadline=$(( $(date +%s) + 600 ))
while :; do
    now_count=$(metric_value "$sink_port" 'lather_requests_total{service="sink",code="200"}')
    delivered=$(awk -v a="$now_count" -v b="$before" 'BEGIN {print a - b}')
    [ "$delivered" -ge "$accepted" ] && break
    [ "$(date +%s)" -lt "$deadline" ] || die "only $delivered of $accepted answers arrived"
    sleep 0.2
done
finished=$(date +%s.%N)
ms() { awk -v us="$1" 'BEGIN {printf "%.1f", us / 1000}'; }
{
    echo "| mode | requests/s as the client sees them | p50 ms | p99 ms | answers/s delivered | server CPU µs/request |"
    echo "|---|---:|---:|---:|---:|---:|"
    printf '| sync (answer on the connection) | %.0f | %s | %s | %.0f | %.1f |\n' "$(json_num "$out/sync.json" rps)" \
        "$(ms "$(json_num "$out/sync.json" p50)")" "$(ms "$(json_num "$out/sync.json" p99)")" \
        "$(json_num "$out/sync.json" rps)" "$(json_num "$out/sync.json" cpu_us_per_request)"
    printf '| async (202, answer POSTed) | %.0f | %s | %s | %.0f | %.1f |\n' "$(json_num "$out/async.json" rps)" \
        "$(ms "$(json_num "$out/async.json" p50)")" "$(ms "$(json_num "$out/async.json" p99)")" \
        "$(awk -v n="$accepted" -v a="$started" -v b="$finished" 'BEGIN {print n / (b - a)}')" \
        "$(json_num "$out/async.json" cpu_us_per_request)"
} >"$out/table.md"
cat "$out/table.md"
log "results in $out"
