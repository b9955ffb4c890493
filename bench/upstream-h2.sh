#!/usr/bin/env bash
# Multiplexing (issue 13, item 4): 1 000 client connections through a lather gateway to a
# lather echo upstream, the gateway speaking HTTP/1.1 over its pool (/h1, the default)
# or HTTP/2 over UPSTREAM_CONNECTIONS h2c connections (/h2). Each path has its own
# upstream process, whose `lather_connections_open` is sampled in the middle of each run
# (the connections the gateway uses). Load: wrk (Debian's) -t1 -cCLIENTS and lather-bench
# -cCLIENTS, ROUNDS rounds interleaved; req/s, p99, upstream connections, gateway CPU per
# request (/proc/PID/stat); h2/h1 ratios of the medians.
#
# Environment: CLIENTS=1000 UPSTREAM_CONNECTIONS=8 ROUNDS=3 DURATION=8 SKIP_BUILD=1
# Results: target/bench-results/upstream-h2-<timestamp>/ (configs, logs, reports, table.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

CLIENTS="${CLIENTS:-1000}"
UPSTREAM_CONNECTIONS="${UPSTREAM_CONNECTIONS:-8}"
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-8}"
LATHER="${LATHER:-$repo/target/release/lather}"
LATHER_BENCH="${LATHER_BENCH:-$repo/target/release/lather-bench}"
command -v wrk >/dev/null 2>&1 || die "wrk not found (apt-get install -y wrk)"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

build_lather
out="$(results_dir upstream-h2)"
log "results in $out"

declare -A up
for v in h1 h2; do
    up[$v]="$(free_port)"
    # access_log = false: a log line per request would slow the measured server.
    printf '[server]\naccess_log = false\nlisten = "127.0.0.1:%s"\n\n[[service]]\nname = "echo"\npath = "/echo"\nbuiltin = "echo"\n' \
        "${up[$v]}" >"$out/upstream-$v.toml"
    start_bg "$out/upstream-$v.log" "$LATHER" serve --config "$out/upstream-$v.toml"
    wait_for "upstream-$v" "$bg_pid" "$out/upstream-$v.log" 20 health_ok "${up[$v]}"
done
port="$(free_port)"
cat >"$out/gateway.toml" <<TOML
[server]
# Off while measuring throughput: a log line per request costs more than an echo.
access_log = false
listen = "127.0.0.1:$port"
max_connections_per_client = $((CLIENTS + 100))

[[service]]
name = "h1"
path = "/h1"
upstream = ["http://127.0.0.1:${up[h1]}/echo"]

[[service]]
name = "h2"
path = "/h2"
upstream = ["http://127.0.0.1:${up[h2]}/echo"]
upstream_protocol = "h2c"
upstream_connections = $UPSTREAM_CONNECTIONS
TOML
start_bg "$out/gateway.log" "$LATHER" serve --config "$out/gateway.toml"
gw_pid=$bg_pid
wait_for gateway "$gw_pid" "$out/gateway.log" 20 health_ok "$port"

hz=$(getconf CLK_TCK)
body="$out/request.xml"
printf '<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><ns:echo xmlns:ns="urn:lather:echo"><text>%s</text></ns:echo></soap:Body></soap:Envelope>' \
    "$(head -c 100 /dev/zero | tr '\0' x)" >"$body"
cat >"$out/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "text/xml; charset=utf-8"
wrk.headers["SOAPAction"] = '"urn:lather:echo#echo"'
local f = io.open("$body", "rb"); wrk.body = f:read("*a"); f:close()
LUA

declare -A rps p99 conns cpu
for round in $(seq 1 "$ROUNDS"); do
    for v in h1 h2; do
        url="http://127.0.0.1:$port/$v"
        log "round $round: /$v, wrk -c$CLIENTS"
        ( sleep $((DURATION / 2)); echo $(( $(metric_value "${up[$v]}" "lather_connections_open ") - 1 )) >"$out/conns-wrk-$v-$round" ) &
        sampler=$!
        before=$(cpu_ticks "$gw_pid")
        wrk -t1 -c"$CLIENTS" -d"${DURATION}s" --latency -s "$out/post.lua" "$url" >"$out/wrk-$v-$round.txt"
        after=$(cpu_ticks "$gw_pid")
        wait "$sampler"
        n=$(awk '/requests in/ {print $1}' "$out/wrk-$v-$round.txt")
        bad=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$out/wrk-$v-$round.txt")
        [ -z "$bad" ] || log "wrk: $bad answers were not 2xx (/$v, round $round)"
        rps[wrk-$v,$round]=$(awk '/Requests\/sec/ {print $2}' "$out/wrk-$v-$round.txt")
        p99[wrk-$v,$round]=$(awk '$1 == "99%" {v = $2; if (v ~ /ms$/) {sub(/ms/, "", v)} else if (v ~ /us$/) {sub(/us/, "", v); v /= 1000} else if (v ~ /s$/) {sub(/s/, "", v); v *= 1000}; print v}' "$out/wrk-$v-$round.txt")
        conns[wrk-$v,$round]=$(cat "$out/conns-wrk-$v-$round")
        cpu[wrk-$v,$round]=$(awk -v t=$((after - before)) -v hz="$hz" -v n="$n" 'BEGIN {printf "%.1f", t / hz * 1e6 / n}')
        log "round $round: /$v, lather-bench -c$CLIENTS"
        ( sleep $((DURATION / 2 + 1)); echo $(( $(metric_value "${up[$v]}" "lather_connections_open ") - 1 )) >"$out/conns-lb-$v-$round" ) &
        sampler=$!
        json="$out/lb-$v-$round.json"
        "$LATHER_BENCH" http "$url" --connections "$CLIENTS" --duration "$DURATION" --warmup 1 \
            --expect urn:lather:echo --server-pid "$gw_pid" --quiet --json "$json" >/dev/null
        wait "$sampler"
        rps[lb-$v,$round]=$(json_num "$json" rps)
        p99[lb-$v,$round]=$(json_num "$json" p99 | awk '{print $1 / 1000}')
        conns[lb-$v,$round]=$(cat "$out/conns-lb-$v-$round")
        cpu[lb-$v,$round]=$(json_num "$json" cpu_us_per_request)
    done
done
med() { for r in $(seq 1 "$ROUNDS"); do eval "echo \${$1[$2,$r]}"; done | median; }
{
    echo "| generator | upstream | req/s | p99 ms | upstream connections | gateway CPU µs/req | h2/h1 req/s |"
    echo "|---|---|---:|---:|---:|---:|---:|"
    for g in wrk lb; do
        name="wrk -t1 -c$CLIENTS"
        [ "$g" = lb ] && name="lather-bench -c$CLIENTS"
        ratio=$(for r in $(seq 1 "$ROUNDS"); do awk -v a="${rps[$g-h2,$r]}" -v b="${rps[$g-h1,$r]}" 'BEGIN {printf "%.3f\n", a / b}'; done | median)
        for v in h1 h2; do
            label="HTTP/1.1 pool"
            [ "$v" = h2 ] && label="h2c, $UPSTREAM_CONNECTIONS connections"
            r=""
            [ "$v" = h2 ] && r=$ratio
            printf '| %s | %s | %.0f | %.1f | %s | %.1f | %s |\n' "$name" "$label" "$(med rps "$g-$v")" \
                "$(med p99 "$g-$v")" "$(med conns "$g-$v")" "$(med cpu "$g-$v")" "$r"
        done
    done
} >"$out/table.md"
cat "$out/table.md"
log "results in $out"
