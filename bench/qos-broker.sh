#!/usr/bin/env bash
# The QoS broker (WS-QoS, issue 14; the seed's Figures 56–59): selections per second and
# their response time against the offered rate, with the offers in a SQLite file. The
# broker holds the seed's test set — 4 providers, 22 services, 27 offers — registered over
# SOAP before the run; every selection asks for one service under a response-time and a
# price bound, so the broker compares that service's offers and returns the best.
#
# (a) saturated: wrk -t2 -cCONNECTIONS for DURATION s, ROUNDS rounds, beside the same
#     server's echo with a body of the same size (what a selection costs over a request
#     that does nothing); server CPU µs per request from /proc/PID/stat.
# (b) open loop (`lather-bench http --rate`), RATES: served rate, p50/p99 response time,
#     server CPU µs per selection.
# Both sides share the machine's 2 cores, as the seed's target asks ("on 2 cores").
#
# Environment: ROUNDS=3 DURATION=10 CONNECTIONS=64 RATES="1000 5000 10000 15000 20000"
#              SKIP_BUILD=1 LATHER LATHER_BENCH
# Results: target/bench-results/qos-broker-<timestamp>/ (config, bodies, outputs, table.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-10}"
CONNECTIONS="${CONNECTIONS:-64}"
RATES="${RATES:-1000 5000 10000 15000 20000}"
LATHER="${LATHER:-$repo/target/release/lather}"
LATHER_BENCH="${LATHER_BENCH:-$repo/target/release/lather-bench}"
command -v wrk >/dev/null 2>&1 || die "wrk not found (apt-get install -y wrk)"
command -v python3 >/dev/null 2>&1 || die "python3 not found"

build_lather
out="$(results_dir qos-broker)"
trap stop_all EXIT
log "results in $out"
port="$(free_port)"
cat >"$out/lather.toml" <<TOML
[server]
# Off while measuring throughput: a log line per request costs more than an echo.
access_log = false
listen = "127.0.0.1:$port"
max_in_flight = 4096
queue_capacity = 4096

[[service]]
name = "broker"
path = "/qos"
builtin = "qos-broker"
store = "$out/offers.sqlite"

[[service]]
name = "echo"
path = "/echo"
builtin = "echo"
TOML
start_bg "$out/lather.log" "$LATHER" --log-level warn serve --config "$out/lather.toml"
pid=$bg_pid
wait_for lather "$pid" "$out/lather.log" 20 health_ok "$port"

# The seed's set: 4 providers, 22 services, 27 offers (services 0-4 have two offers each).
python3 - "$port" <<'PY'
import http.client, sys
port = int(sys.argv[1])
offers = {}
n = 0
for service in range(22):
    provider = service % 4
    for k in range(2 if service < 5 else 1):
        offers.setdefault(provider, []).append(
            f"<q:Offer><q:Service>s{service}</q:Service><q:Endpoint>http://10.0.0.{provider + 1}:8080/s{service}</q:Endpoint>"
            f"<q:Name>o{k}</q:Name><q:ResponseTimeMs>{20 + 30 * k}</q:ResponseTimeMs><q:Throughput>{500 - 200 * k}</q:Throughput>"
            f"<q:Price>{10 - 4 * k}</q:Price></q:Offer>")
        n += 1
assert n == 27
for provider, parts in offers.items():
    body = ('<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body>'
            '<q:RegisterOffers xmlns:q="urn:lather:qos">' + "".join(parts) +
            '</q:RegisterOffers></s:Body></s:Envelope>')
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("POST", "/qos", body.encode(), {"Content-Type": "application/soap+xml; charset=utf-8"})
    r = c.getresponse()
    text = r.read().decode()
    assert r.status == 200 and "<q:Registered>" in text, text
PY

select_body='<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><q:SelectOffer xmlns:q="urn:lather:qos"><q:Service>s3</q:Service><q:MaxResponseTimeMs>100</q:MaxResponseTimeMs><q:MaxPrice>8</q:MaxPrice></q:SelectOffer></s:Body></s:Envelope>'
printf '%s' "$select_body" >"$out/select.xml"
# An echo body of the same size.
pad=$(( ${#select_body} - 160 ))
printf '<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><ns:echo xmlns:ns="urn:lather:echo"><text>%s</text></ns:echo></s:Body></s:Envelope>' \
    "$(head -c "$pad" /dev/zero | tr '\0' 'x')" >"$out/echo.xml"
answer=$(curl -s -H 'Content-Type: application/soap+xml' --data-binary @"$out/select.xml" "http://127.0.0.1:$port/qos")
echo "$answer" | grep -q '<q:Name>o1</q:Name>' || die "the selection did not pick o1: $answer"
for what in select echo; do
    cat >"$out/$what.lua" <<LUA
local f = io.open("$out/$what.xml", "rb"); local body = f:read("*a"); f:close()
wrk.method = "POST"
wrk.body = body
wrk.headers["Content-Type"] = "application/soap+xml; charset=utf-8"
LUA
done
path_of() { if [ "$1" = select ]; then echo /qos; else echo /echo; fi; }
wrk -t2 -c"$CONNECTIONS" -d2s -s "$out/select.lua" "http://127.0.0.1:$port/qos" >/dev/null
hz=$(getconf CLK_TCK)
declare -A rps cpu p99
for round in $(seq 1 "$ROUNDS"); do
    for what in select echo; do
        log "round $round: $what (saturated)"
        before=$(cpu_ticks "$pid")
        wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$out/$what.lua" \
            "http://127.0.0.1:$port$(path_of "$what")" >"$out/wrk-$what-$round.txt"
        after=$(cpu_ticks "$pid")
        bad=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$out/wrk-$what-$round.txt")
        [ -z "$bad" ] || die "wrk: $bad answers were not 2xx ($what, round $round)"
        reqs=$(awk '/requests in/ {print $1}' "$out/wrk-$what-$round.txt")
        rps[$what,$round]=$(awk '/Requests\/sec/ {print $2}' "$out/wrk-$what-$round.txt")
        p99[$what,$round]=$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}' "$out/wrk-$what-$round.txt")
        cpu[$what,$round]=$(awk -v t=$((after - before)) -v hz="$hz" -v q="$reqs" 'BEGIN {printf "%.1f", t / hz * 1e6 / q}')
    done
done
{
    echo "lather $(git -C "$repo" rev-parse --short HEAD), $(nproc) cores, $(date -u +%Y-%m-%d); broker and generator on the same 2 cores"
    echo
    echo "(a) saturated, wrk -t2 -c$CONNECTIONS -d${DURATION}s, $ROUNDS rounds interleaved, medians:"
    echo
    echo "| request | requests/s | p99 ms | server CPU µs/request |"
    echo "|---|---:|---:|---:|"
    for what in select echo; do
        printf '| %s | %.0f | %s | %s |\n' "$what" "$(median_over rps "$what")" \
            "$(median_over p99 "$what")" "$(median_over cpu "$what")"
    done
    echo
    echo "(b) SelectOffer at fixed rates (lather-bench http --rate, ${DURATION} s each, 64 connections):"
    echo
    echo "| offered/s | served/s | p50 ms | p99 ms | server CPU µs/selection | failed |"
    echo "|---:|---:|---:|---:|---:|---:|"
    for rate in $RATES; do
        json="$out/rate-$rate.json"
        "$LATHER_BENCH" http "http://127.0.0.1:$port/qos" --rate "$rate" --duration "$DURATION" --warmup 1 \
            --connections 64 --body "$out/select.xml" --soap 1.2 --server-pid "$pid" --quiet --json "$json" >/dev/null
        python3 - "$json" "$rate" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
lat = r["latency_us"]
print(f"| {sys.argv[2]} | {r['rps']:.0f} | {lat['p50']/1000:.2f} | {lat['p99']/1000:.2f} | {(r.get('server') or {}).get('cpu_us_per_request') or 0:.1f} | {r['requests_failed']} |")
PY
    done
} >"$out/table.md"
cat "$out/table.md"
log "results in $out"
