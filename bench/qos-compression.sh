#!/usr/bin/env bash
# Load-adaptive compression (WS-QoS, issue 14; the seed's Figures 53/54): requests/s and
# server CPU per request of a lather echo answering ~TEXT_BYTES-byte answers when every
# client requires compression (q:Compression required), when none wants it (none), and
# "dynamic" (half none, half server-decides, alternating), saturated by wrk.
# lather runs pinned to one core (taskset -c 1) and wrk to the other (-c 0), so lather's
# CPU share is measured against the one CPU it may use, as on a dedicated server; at
# saturation it is above compress_below_cpu (80%), and the dynamic mode should compress
# (almost) nothing. Then server-decides requests at fixed rates (lather-bench open loop,
# RATES) show the share compressed falling as the CPU passes the threshold.
#
# Environment: TEXT_BYTES=4000 ROUNDS=3 DURATION=15 CONNECTIONS=32 RATES="4000 12000 18000 24000"
#              SKIP_BUILD=1
# Results: target/bench-results/qos-compression-<timestamp>/ (config, bodies, wrk output, table.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

TEXT_BYTES="${TEXT_BYTES:-4000}"
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-15}"
CONNECTIONS="${CONNECTIONS:-32}"
RATES="${RATES:-4000 12000 18000 24000}"
LATHER="${LATHER:-$repo/target/release/lather}"
LATHER_BENCH="${LATHER_BENCH:-$repo/target/release/lather-bench}"
command -v wrk >/dev/null 2>&1 || die "wrk not found (apt-get install -y wrk)"
command -v taskset >/dev/null 2>&1 || die "taskset not found (util-linux)"
[ "$(nproc)" -ge 2 ] || die "needs two cores (lather on one, wrk on the other)"

build_lather
out="$(results_dir qos-compression)"
log "results in $out"
port="$(free_port)"
cat >"$out/lather.toml" <<TOML
[server]
# Off while measuring throughput: a log line per request costs more than an echo.
access_log = false
listen = "127.0.0.1:$port"
max_in_flight = 4096
queue_capacity = 4096

[qos]
compress_below_cpu = 80

[[service]]
name = "echo"
path = "/echo"
builtin = "echo"
TOML
start_bg "$out/lather.log" taskset -c 1 "$LATHER" --log-level warn serve --config "$out/lather.toml"
pid=$bg_pid
wait_for lather "$pid" "$out/lather.log" 20 health_ok "$port"
url="http://127.0.0.1:$port/echo"

text=$(head -c "$TEXT_BYTES" /dev/zero | tr '\0' 'x' | sed 's/xxxxxxxxxx/lather qos /g')
for pref in required none server-decides; do
    printf '<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Header><q:QoS xmlns:q="urn:lather:qos"><q:Compression>%s</q:Compression></q:QoS></soap:Header><soap:Body><ns:echo xmlns:ns="urn:lather:echo"><text>%s</text></ns:echo></soap:Body></soap:Envelope>' \
        "$pref" "$text" >"$out/body-$pref.xml"
done
# mode script: all one preference, or alternating none / server-decides.
script() {
    local mode=$1 first=$1 second=$1
    [ "$mode" = dynamic ] && first=none && second=server-decides
    cat >"$out/$mode.lua" <<LUA
local function read(p) local f = io.open(p, "rb"); local b = f:read("*a"); f:close(); return b end
local bodies = { read("$out/body-$first.xml"), read("$out/body-$second.xml") }
local n = 0
request = function()
    n = n + 1
    return wrk.format("POST", nil, {
        ["Content-Type"] = "text/xml; charset=utf-8",
        ["SOAPAction"] = '"urn:lather:echo#echo"',
        ["Accept-Encoding"] = "gzip",
    }, bodies[(n % 2) + 1])
end
LUA
}
modes="required none dynamic"
for m in $modes; do script "$m"; done
hz=$(getconf CLK_TCK)
taskset -c 0 wrk -t1 -c"$CONNECTIONS" -d2s -s "$out/none.lua" "$url" >/dev/null

declare -A rps cpu share
for round in $(seq 1 "$ROUNDS"); do
    for m in $modes; do
        log "round $round: $m"
        before=$(cpu_ticks "$pid")
        c0=$(metric_value "$port" lather_responses_compressed_total)
        taskset -c 0 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -s "$out/$m.lua" "$url" >"$out/wrk-$m-$round.txt"
        after=$(cpu_ticks "$pid")
        c1=$(metric_value "$port" lather_responses_compressed_total)
        bad=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$out/wrk-$m-$round.txt")
        [ -z "$bad" ] || die "wrk: $bad answers were not 2xx ($m, round $round)"
        reqs=$(awk '/requests in/ {print $1}' "$out/wrk-$m-$round.txt")
        rps[$m,$round]=$(awk '/Requests\/sec/ {print $2}' "$out/wrk-$m-$round.txt")
        cpu[$m,$round]=$(awk -v t=$((after - before)) -v hz="$hz" -v q="$reqs" 'BEGIN {printf "%.1f", t / hz * 1e6 / q}')
        share[$m,$round]=$(awk -v a="$c0" -v b="$c1" -v q="$reqs" 'BEGIN {printf "%.3f", (b - a) / q}')
        # Let the CPU reading settle between modes.
        sleep 1.5
    done
done
declare -A gain
for round in $(seq 1 "$ROUNDS"); do
    for m in $modes; do
        gain[$m,$round]=$(awk -v a="${rps[$m,$round]}" -v b="${rps[none,$round]}" 'BEGIN {printf "%.3f", a / b}')
    done
done
{
    echo "lather echo pinned to one core, ~${TEXT_BYTES}-byte answers, wrk -t1 -c$CONNECTIONS -d${DURATION}s on the other core, $ROUNDS rounds interleaved, medians; compress_below_cpu = 80"
    echo
    echo "| mode | requests/s | × none | server CPU µs/request | answers compressed |"
    echo "|---|---:|---:|---:|---:|"
    for m in $modes; do
        printf '| %s | %.0f | %.3f | %s | %s |\n' "$m" "$(median_over rps "$m")" \
            "$(median_over gain "$m")" "$(median_over cpu "$m")" "$(median_over share "$m")"
    done
    echo
    echo "server-decides only, open loop (lather-bench --rate, ${DURATION} s each):"
    echo
    echo "| offered req/s | served req/s | server CPU µs/request | lather_cpu_percent at the end | answers compressed |"
    echo "|---:|---:|---:|---:|---:|"
    for rate in $RATES; do
        sleep 1.5
        json="$out/rate-$rate.json"
        c0=$(metric_value "$port" lather_responses_compressed_total)
        taskset -c 0 "$LATHER_BENCH" http "$url" --rate "$rate" --duration "$DURATION" --warmup 1 \
            --body "$out/body-server-decides.xml" --header "Accept-Encoding: gzip" \
            --server-pid "$pid" --quiet --json "$json" >/dev/null
        c1=$(metric_value "$port" lather_responses_compressed_total)
        load=$(metric_value "$port" lather_cpu_percent)
        served=$(json_num "$json" rps)
        printf '| %s | %.0f | %.1f | %s | %.3f |\n' "$rate" "$served" "$(json_num "$json" cpu_us_per_request)" \
            "$load" "$(awk -v a="$c0" -v b="$c1" -v r="$rate" -v d="$DURATION" 'BEGIN {print (b - a) / (r * (d + 1))}')"
    done
} >"$out/table.md"
cat "$out/table.md"
log "results in $out"
