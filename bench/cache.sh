#!/usr/bin/env bash
# The response cache (issue 13, item 1): a lather gateway in front of the gSOAP echo server
# (bench/gsoap), uncached (/plain: no handlers) against cached (/cached: a `cache` handler
# in both flows, operations = ["*"]), beside gSOAP called directly (the echo's p99).
#
# 1. Hit ratio vs throughput: lather-bench http (closed loop, CONNECTIONS connections) with
#    `--vary` on the text and `--unique-percent P` (P of every 100 requests unique, the
#    others one repeated body) for P in UNIQUE; the cache's own hit counter gives the ratio
#    measured. Server CPU per request is the lather process's (/proc/PID/stat).
# 2. wrk (Debian's; -t1 -cCONNECTIONS, one fixed body: every request a hit after the
#    first) on gSOAP, /plain and /cached, with lather's CPU per request from /proc/PID/stat.
# ROUNDS rounds, interleaved; medians.
#
# Environment: UNIQUE="100 50 10 0" ROUNDS=3 DURATION=5 CONNECTIONS=16 PAYLOAD_BYTES=100
#   SKIP_BUILD=1 WRK_SECONDS=5 (0: no wrk runs)
# Results: target/bench-results/cache-<timestamp>/ (config, logs, reports, table.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

UNIQUE="${UNIQUE:-100 50 10 0}"
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-5}"
CONNECTIONS="${CONNECTIONS:-16}"
PAYLOAD_BYTES="${PAYLOAD_BYTES:-100}"
WRK_SECONDS="${WRK_SECONDS:-5}"
LATHER="${LATHER:-$repo/target/release/lather}"
LATHER_BENCH="${LATHER_BENCH:-$repo/target/release/lather-bench}"
if [ "$WRK_SECONDS" -gt 0 ]; then
    command -v wrk >/dev/null 2>&1 || die "wrk not found (apt-get install -y wrk), or set WRK_SECONDS=0"
fi

build_lather
out="$(results_dir cache)"
log "results in $out"
gsoap_bin="$("$here/gsoap/build.sh")"
gsoap_port="$(free_port)"
start_bg "$out/gsoap.log" "$gsoap_bin" "$gsoap_port"
gsoap_pid=$bg_pid
wait_for gSOAP "$gsoap_pid" "$out/gsoap.log" 10 port_open "$gsoap_port"

port="$(free_port)"
cat >"$out/lather.toml" <<TOML
[server]
# Off while measuring throughput: a log line per request costs more than an echo.
access_log = false
listen = "127.0.0.1:$port"

[handlers.cache]
kind = "cache"
operations = ["*"]
ttl_ms = 600000
max_bytes = 268435456

[[service]]
name = "plain"
path = "/plain"
upstream = ["http://127.0.0.1:$gsoap_port/"]

[[service]]
name = "cached"
path = "/cached"
upstream = ["http://127.0.0.1:$gsoap_port/"]
request = [["cache"]]
response = [["cache"]]
TOML
start_bg "$out/lather.log" "$LATHER" serve --config "$out/lather.toml"
lather_pid=$bg_pid
wait_for lather "$lather_pid" "$out/lather.log" 20 health_ok "$port"

declare -A url=([gsoap]="http://127.0.0.1:$gsoap_port/" [plain]="http://127.0.0.1:$port/plain"
    [cached]="http://127.0.0.1:$port/cached")
declare -A pid=([gsoap]="$gsoap_pid" [plain]="$lather_pid" [cached]="$lather_pid")
for t in gsoap plain cached; do
    verify_echo "$t" "${url[$t]}" "$out/probe-$t.json"
done

hz=$(getconf CLK_TCK)

# The built-in request's text starts with the alphabet; its first 16 letters vary.
mark="abcdefghijklmnop"
body="$out/request.xml"
printf '<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><ns:echo xmlns:ns="urn:lather:echo"><text>%s</text></ns:echo></soap:Body></soap:Envelope>' \
    "$(head -c "$PAYLOAD_BYTES" /dev/zero | tr '\0' x)" >"$body"
cat >"$out/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "text/xml; charset=utf-8"
wrk.headers["SOAPAction"] = '"urn:lather:echo#echo"'
local f = io.open("$body", "rb"); wrk.body = f:read("*a"); f:close()
LUA

declare -A rps p99 cpu hits
for round in $(seq 1 "$ROUNDS"); do
    for t in gsoap plain; do
        json="$out/$t-$round.json"
        log "round $round: $t"
        "$LATHER_BENCH" http "${url[$t]}" --connections "$CONNECTIONS" --duration "$DURATION" \
            --warmup 1 --payload-bytes "$PAYLOAD_BYTES" --vary "$mark" --expect urn:lather:echo \
            --server-pid "${pid[$t]}" --quiet --json "$json" >/dev/null
        rps[$t,$round]=$(json_num "$json" rps)
        p99[$t,$round]=$(json_num "$json" p99)
        cpu[$t,$round]=$(json_num "$json" cpu_us_per_request)
    done
    for u in $UNIQUE; do
        json="$out/cached-$u-$round.json"
        h0=$(metric_value "$port" 'lather_cache_hits_total{service="cached"')
        m0=$(metric_value "$port" 'lather_cache_misses_total{service="cached"')
        log "round $round: cached, $u% unique"
        "$LATHER_BENCH" http "${url[cached]}" --connections "$CONNECTIONS" --duration "$DURATION" \
            --warmup 1 --payload-bytes "$PAYLOAD_BYTES" --vary "$mark" --unique-percent "$u" \
            --expect urn:lather:echo --server-pid "$lather_pid" --quiet --json "$json" >/dev/null
        h1=$(metric_value "$port" 'lather_cache_hits_total{service="cached"')
        m1=$(metric_value "$port" 'lather_cache_misses_total{service="cached"')
        rps[cached-$u,$round]=$(json_num "$json" rps)
        p99[cached-$u,$round]=$(json_num "$json" p99)
        cpu[cached-$u,$round]=$(json_num "$json" cpu_us_per_request)
        hits[$u,$round]=$(awk -v h=$((h1 - h0)) -v m=$((m1 - m0)) 'BEGIN {printf "%.1f", 100 * h / (h + m)}')
    done
    if [ "$WRK_SECONDS" -gt 0 ]; then
        for t in gsoap plain cached; do
            before=$(cpu_ticks "${pid[$t]}")
            wrk -t1 -c"$CONNECTIONS" -d"${WRK_SECONDS}s" --latency -s "$out/post.lua" "${url[$t]}" \
                >"$out/wrk-$t-$round.txt"
            after=$(cpu_ticks "${pid[$t]}")
            n=$(awk '/requests in/ {print $1}' "$out/wrk-$t-$round.txt")
            bad=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$out/wrk-$t-$round.txt")
            [ -z "$bad" ] || die "wrk: $bad answers were not 2xx ($t, round $round)"
            rps[wrk-$t,$round]=$(awk '/Requests\/sec/ {print $2}' "$out/wrk-$t-$round.txt")
            p99[wrk-$t,$round]=$(awk '$1 == "99%" {v = $2; if (v ~ /ms$/) {sub(/ms/, "", v); v *= 1000} else if (v ~ /us$/) {sub(/us/, "", v)} else if (v ~ /s$/) {sub(/s/, "", v); v *= 1e6}; print v}' "$out/wrk-$t-$round.txt")
            cpu[wrk-$t,$round]=$(awk -v t=$((after - before)) -v hz="$hz" -v n="$n" 'BEGIN {printf "%.1f", t / hz * 1e6 / n}')
        done
    fi
done

row() { # LABEL KEY HIT-RATIO
    local k=$2
    local r c p
    r=$(for i in $(seq 1 "$ROUNDS"); do echo "${rps[$k,$i]}"; done | median)
    c=$(for i in $(seq 1 "$ROUNDS"); do echo "${cpu[$k,$i]}"; done | median)
    p=$(for i in $(seq 1 "$ROUNDS"); do echo "${p99[$k,$i]}"; done | median)
    local base
    base=$(for i in $(seq 1 "$ROUNDS"); do echo "${rps[${4:-plain},$i]}"; done | median)
    printf '| %s | %s | %.0f | %.2f | %.3f | %.1f |\n' "$1" "$3" "$r" "$(awk -v a="$r" -v b="$base" 'BEGIN {print a / b}')" \
        "$(awk -v p="$p" 'BEGIN {print p / 1000}')" "$c"
}
{
    echo "| path | cache hits | req/s | × uncached | p99 ms | CPU µs/req (server) |"
    echo "|---|---:|---:|---:|---:|---:|"
    row "gSOAP direct (lather-bench)" gsoap "–"
    row "lather gateway, uncached" plain "–"
    for u in $UNIQUE; do
        h=$(for i in $(seq 1 "$ROUNDS"); do echo "${hits[$u,$i]}"; done | median)
        row "lather gateway, cache, $u% unique" "cached-$u" "$h%"
    done
    if [ "$WRK_SECONDS" -gt 0 ]; then
        row "gSOAP direct (wrk)" wrk-gsoap "–" wrk-plain
        row "lather gateway, uncached (wrk)" wrk-plain "–" wrk-plain
        row "lather gateway, cache (wrk, one body)" wrk-cached "≈100%" wrk-plain
    fi
} >"$out/table.md"
cat "$out/table.md"
log "results in $out"
