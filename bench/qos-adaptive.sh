#!/usr/bin/env bash
# Protecting a server from overload with adaptive WS-QoS offers (issue 14; the seed's
# section 7.4, Figures 68–70, Table 6): CLIENTS price-sensitive clients (`lather-bench
# qos-adaptive`, pinned to core 0) ask the QoS broker for the echo service under their
# own price limit (0.10, 0.20, … as Table 6's limits, one per client) and, while an offer
# fits, send RATE requests/s each; they join one after another over RAMP_S seconds, and
# at LEAVE_S every other client leaves for good (the seed's third part: the load falls). The
# server (pinned to core 1, so its CPU share is of that one core) burns BURN_US µs of CPU
# per request and hosts the broker too; its offer "standard" starts at price 0.
#
# Two runs, same clients: "adaptive" — the seed's rule (average CPU above 80% over
# WINDOW_S seconds: price + 0.10; below 70%: − 0.10); "fixed" — the same offer without the
# rule (the price stays 0, every client stays, the server overloads).
#
# Environment: CLIENTS=40 RATE=250 RAMP_S=40 DURATION=240 WINDOW_S=1 BURN_US=200
#              SETTLE_S=60 LEAVE_S=150 RUNS="adaptive fixed" SKIP_BUILD=1 LATHER LATHER_BENCH
# Results: target/bench-results/qos-adaptive-<timestamp>/ (configs, timelines, charts,
#          summary.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

CLIENTS="${CLIENTS:-40}"
RATE="${RATE:-250}"
RAMP_S="${RAMP_S:-40}"
DURATION="${DURATION:-240}"
WINDOW_S="${WINDOW_S:-1}"
BURN_US="${BURN_US:-200}"
SETTLE_S="${SETTLE_S:-60}"
LEAVE_S="${LEAVE_S:-150}"
RUNS="${RUNS:-adaptive fixed}"
LATHER="${LATHER:-$repo/target/release/lather}"
LATHER_BENCH="${LATHER_BENCH:-$repo/target/release/lather-bench}"
command -v taskset >/dev/null 2>&1 || die "taskset not found (util-linux)"
[ "$(nproc)" -ge 2 ] || die "needs two cores (lather on one, the clients on the other)"

build_lather
out="$(results_dir qos-adaptive)"
trap stop_all EXIT
log "results in $out"
printf '<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><ns:echo xmlns:ns="urn:lather:echo"><text>isbn 978-3-16-148410-0</text></ns:echo></soap:Body></soap:Envelope>' >"$out/body.xml"

run() {
    local label=$1 adaptive=$2 port
    port="$(free_port)"
    cat >"$out/lather-$label.toml" <<TOML
[server]
# Off while measuring throughput: a log line per request costs more than an echo.
access_log = false
listen = "127.0.0.1:$port"
max_in_flight = 64
queue_capacity = 1024

[qos]
broker = "http://127.0.0.1:$port/qos"

[handlers.work]
kind = "cpu-burn"
micros = $BURN_US

[[service]]
name = "echo"
path = "/echo"
builtin = "echo"
request = [["work"]]

[[service.offer]]
name = "standard"
response_time_ms = 100
throughput = 10000
price = 0
$adaptive

[[service]]
name = "broker"
path = "/qos"
builtin = "qos-broker"
TOML
    start_bg "$out/lather-$label.log" taskset -c 1 "$LATHER" --log-level info serve --config "$out/lather-$label.toml"
    local pid=$bg_pid
    wait_for lather "$pid" "$out/lather-$label.log" 20 health_ok "$port"
    log "$label: $CLIENTS clients, $RATE req/s each, ${DURATION}s"
    taskset -c 0 "$LATHER_BENCH" qos-adaptive --url "http://127.0.0.1:$port/echo" \
        --broker "http://127.0.0.1:$port/qos" --metrics "http://127.0.0.1:$port/metrics" \
        --clients "$CLIENTS" --rate-per-client "$RATE" --ramp-s "$RAMP_S" --duration-s "$DURATION" \
        --settle-s "$SETTLE_S" --leave-s "$LEAVE_S" --body "$out/body.xml" --label "$label" --out "$out" >"$out/bench-$label.txt"
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    sleep 2
}

for r in $RUNS; do
    case $r in
        adaptive) run adaptive "[service.offer.adaptive]
window_s = $WINDOW_S
raise_above = 80
lower_below = 70
step = 0.1
max_price = 10" ;;
        fixed) run fixed "" ;;
        *) die "RUNS: adaptive and/or fixed, not $r" ;;
    esac
done
{
    echo "lather $(git -C "$repo" rev-parse --short HEAD), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(date -u +%Y-%m-%d)"
    echo "server pinned to core 1 (cpu-burn ${BURN_US} µs per request), clients pinned to core 0; window ${WINDOW_S} s, clients joining over ${RAMP_S} s, every other one leaving at ${LEAVE_S} s"
    for r in $RUNS; do
        echo
        cat "$out/qos-adaptive-$r.md"
    done
} >"$out/summary.md"
cat "$out/summary.md"
log "results in $out"
