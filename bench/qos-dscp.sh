#!/usr/bin/env bash
# The cost of DSCP marking (WS-QoS traffic classes, issue 14): requests/s and server CPU per
# request of a lather echo whose `[qos.class.gold]` marks answers DSCP 46, for requests
# stating `q:TrafficClass gold` (their connections marked) against the same requests
# without the QoS header (nothing marked, nothing parsed), and against a server with no
# class configured (the marking code idle). lather pinned to one core, wrk to the other,
# ROUNDS rounds interleaved, medians.
#
# Environment: ROUNDS=3 DURATION=10 CONNECTIONS=32 SKIP_BUILD=1
# Results: target/bench-results/qos-dscp-<timestamp>/ (configs, bodies, wrk output, table.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-10}"
CONNECTIONS="${CONNECTIONS:-32}"
LATHER="${LATHER:-$repo/target/release/lather}"
command -v wrk >/dev/null 2>&1 || die "wrk not found (apt-get install -y wrk)"
command -v taskset >/dev/null 2>&1 || die "taskset not found (util-linux)"

build_lather
out="$(results_dir qos-dscp)"
log "results in $out"
# server NAME PORT EXTRA
server() {
    # access_log = false: a log line per request would slow the measured server.
    printf '[server]\naccess_log = false\nlisten = "127.0.0.1:%s"\nmax_in_flight = 4096\nqueue_capacity = 4096\n%s\n[[service]]\nname = "echo"\npath = "/echo"\nbuiltin = "echo"\n' \
        "$2" "$3" >"$out/$1.toml"
    start_bg "$out/$1.log" taskset -c 1 "$LATHER" --log-level warn serve --config "$out/$1.toml"
}
marked_port="$(free_port)"
server marked "$marked_port" '[qos.class.gold]
dscp = 46'
marked_pid=$bg_pid
wait_for lather "$marked_pid" "$out/marked.log" 20 health_ok "$marked_port"
plain_port="$(free_port)"
server plain "$plain_port" ''
plain_pid=$bg_pid
wait_for lather "$plain_pid" "$out/plain.log" 20 health_ok "$plain_port"

payload='<ns:echo xmlns:ns="urn:lather:echo"><text>xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx</text></ns:echo>'
qos='<soap:Header><q:QoS xmlns:q="urn:lather:qos"><q:TrafficClass>gold</q:TrafficClass></q:QoS></soap:Header>'
for kind in class none; do
    header=""
    [ "$kind" = class ] && header="$qos"
    printf '<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/">%s<soap:Body>%s</soap:Body></soap:Envelope>' \
        "$header" "$payload" >"$out/body-$kind.xml"
    cat >"$out/$kind.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "text/xml; charset=utf-8"
wrk.headers["SOAPAction"] = '"urn:lather:echo#echo"'
local f = io.open("$out/body-$kind.xml", "rb"); wrk.body = f:read("*a"); f:close()
LUA
done
hz=$(getconf CLK_TCK)
# case NAME PORT PID SCRIPT
cases="marked-class:$marked_port:$marked_pid:class marked-none:$marked_port:$marked_pid:none plain-class:$plain_port:$plain_pid:class"
for c in $cases; do
    IFS=: read -r _ port _ script <<<"$c"
    taskset -c 0 wrk -t1 -c"$CONNECTIONS" -d2s -s "$out/$script.lua" "http://127.0.0.1:$port/echo" >/dev/null
done
declare -A rps cpu gain
for round in $(seq 1 "$ROUNDS"); do
    for c in $cases; do
        IFS=: read -r name port pid script <<<"$c"
        log "round $round: $name"
        before=$(cpu_ticks "$pid")
        taskset -c 0 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -s "$out/$script.lua" "http://127.0.0.1:$port/echo" >"$out/wrk-$name-$round.txt"
        after=$(cpu_ticks "$pid")
        bad=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$out/wrk-$name-$round.txt")
        [ -z "$bad" ] || die "wrk: $bad answers were not 2xx ($name, round $round)"
        reqs=$(awk '/requests in/ {print $1}' "$out/wrk-$name-$round.txt")
        rps[$name,$round]=$(awk '/Requests\/sec/ {print $2}' "$out/wrk-$name-$round.txt")
        cpu[$name,$round]=$(awk -v t=$((after - before)) -v hz="$hz" -v q="$reqs" 'BEGIN {printf "%.2f", t / hz * 1e6 / q}')
    done
    for c in $cases; do
        name=${c%%:*}
        gain[$name,$round]=$(awk -v a="${rps[$name,$round]}" -v b="${rps[plain-class,$round]}" 'BEGIN {printf "%.3f", a / b}')
    done
done
{
    echo "lather echo pinned to one core, wrk -t1 -c$CONNECTIONS -d${DURATION}s on the other, $ROUNDS rounds interleaved, medians"
    echo
    echo "| server / requests | requests/s | × no classes configured | server CPU µs/request |"
    echo "|---|---:|---:|---:|"
    for c in $cases; do
        name=${c%%:*}
        printf '| %s | %.0f | %.3f | %s |\n' "$name" "$(median_over rps "$name")" "$(median_over gain "$name")" "$(median_over cpu "$name")"
    done
} >"$out/table.md"
cat "$out/table.md"
log "results in $out"
