#!/usr/bin/env bash
# Server CPU per request, side by side: lather's echo, a lather gateway in front of a lather
# echo (the gateway process alone is measured), lather's echo with five digest(10)
# handlers in one stage, gSOAP 2.8's echo, Apache CXF 4's echo and CXF with five digest(10)
# interceptors, and two reverse proxies as peers of the gateway (nginx-gw and haproxy-gw:
# Debian's nginx and HAProxy in front of a lather echo, the proxy process alone measured; see
# bench/proxy_peer.sh) — interleaved, at fixed offered rates (open loop, `lather-bench http --rate R
# --server-pid PID`) and saturated with wrk (Debian's package; the server's CPU read from
# /proc/PID/stat before and after).
#
# Writes one table (every run) and a summary (the median over the rounds of each server
# and load, with the ratio of CPU per request to gSOAP's echo) to
# target/bench-results/efficiency-<timestamp>/.
#
# Environment: RATES="5000 20000", DURATION=10, WARMUP=2, CONNECTIONS=32, ROUNDS=3,
# WRK_THREADS=2, PAYLOAD_BYTES=100, SERVERS (default: every server above that can run:
# "lather lather-gw nginx-gw haproxy-gw lather-5h gsoap cxf cxf-5i"; also lather-pc and
# lather-ws, lather's echo with `threading = "per-core"` / `"work-stealing"`, lather-w1 and
# lather-gw-w1, the echo and the gateway with one I/O thread (`workers = 1`), lather-np and
# lather-gw-np, the echo and the gateway (and its backend) with `pin_io_threads = false`, and
# bare, a bare hyper HTTP/1.1 server answering with the request's body: the floor under
# lather's echo), WARMUP_CXF=120 (seconds of load on each CXF server before the first round,
# for its JIT), LATHER, OLD_LATHER (optional: another lather binary measured as lather-old,
# as the gateway of lather-gw-old, in front of an echo of LATHER, and with the five handlers
# as lather-5h-old: e.g. a build of an earlier commit), SKIP_BUILD=1, CXF_JAR, JAVA.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"
# shellcheck source=SCRIPTDIR/proxy_peer.sh
. "$here/proxy_peer.sh"

ROUNDS="${ROUNDS:-3}"
bench_defaults
RATES="${RATES:-5000 20000}"
WRK_THREADS="${WRK_THREADS:-2}"
WARMUP_CXF="${WARMUP_CXF:-120}"
JAVA="${JAVA:-java}"
SERVERS="${SERVERS:-lather lather-gw nginx-gw haproxy-gw lather-5h gsoap cxf cxf-5i}"
command -v wrk >/dev/null 2>&1 || die "wrk not found (apt-get install -y wrk)"
build_lather
[ -x "$LATHER" ] || die "$LATHER not found"
out_dir="$(results_dir efficiency)"
clk_tck="$(getconf CLK_TCK 2>/dev/null || echo 100)"

declare -A url pid

# lather_server NAME BINARY SERVICE_TOML [SERVER_KEYS] : starts lather serving SERVICE_TOML
# (after its [server] table, which holds SERVER_KEYS) on a free port; sets pid[NAME] and
# started_port. (Not run in a command
# substitution: the process must be recorded in this shell, to be stopped on exit.)
started_port=""
lather_server() {
    local config
    started_port="$(free_port)"
    config="$out_dir/$1.toml"
    # access_log = false (where the build knows it): a log line per request would slow
    # the measured server.
    printf '[server]\n%s\n%s\nlisten = "127.0.0.1:%s"\n\n%s' "$(access_log_off "$2")" "${4:-}" "$started_port" "$3" >"$config"
    start_bg "$out_dir/$1.log" "$2" serve --config "$config"
    pid[$1]=$bg_pid
    wait_for "$1" "${pid[$1]}" "$out_dir/$1.log" 10 health_ok "$started_port"
}

echo_service='[[service]]
name = "echo"
path = "/echo"
builtin = "echo"
'

# start NAME : starts server NAME; sets url[NAME] and pid[NAME] (the process measured).
start() {
    local port jar
    case $1 in
        lather | lather-old)
            local bin=$LATHER
            [ "$1" = lather-old ] && bin=$OLD_LATHER
            lather_server "$1" "$bin" "$echo_service"
            port=$started_port
            ;;
        lather-pc | lather-ws | lather-w1 | lather-np)
            local keys="threading = \"per-core\""
            [ "$1" = lather-ws ] && keys="threading = \"work-stealing\""
            [ "$1" = lather-w1 ] && keys="workers = 1"
            [ "$1" = lather-np ] && keys="pin_io_threads = false"
            lather_server "$1" "$LATHER" "$echo_service" "$keys"
            port=$started_port
            ;;
        lather-gw | lather-gw-old | lather-gw-w1 | lather-gw-np)
            local gw_bin=$LATHER gw_keys="" backend_keys=""
            [ "$1" = lather-gw-old ] && gw_bin=$OLD_LATHER
            # lather-gw-w1: the gateway with one I/O thread (`workers = 1`).
            [ "$1" = lather-gw-w1 ] && gw_keys="workers = 1"
            # lather-gw-np: the gateway and its backend with unpinned I/O threads.
            [ "$1" = lather-gw-np ] && gw_keys="pin_io_threads = false" && backend_keys=$gw_keys
            lather_server "$1-backend" "$LATHER" "$echo_service" "$backend_keys"
            lather_server "$1" "$gw_bin" "[[service]]
name = \"gw\"
path = \"/echo\"
upstream = [\"http://127.0.0.1:$started_port/echo\"]
" "$gw_keys"
            port=$started_port
            ;;
        nginx-gw | haproxy-gw)
            lather_server "$1-backend" "$LATHER" "$echo_service"
            proxy_peer "${1%-gw}" "$out_dir/$1" "$started_port"
            pid[$1]=$proxy_pid
            port=$started_port
            ;;
        lather-5h | lather-5h-old)
            bin=$LATHER
            [ "$1" = lather-5h-old ] && bin=$OLD_LATHER
            lather_server "$1" "$bin" "${echo_service}request = [[\"d1\", \"d2\", \"d3\", \"d4\", \"d5\"]]
$(for i in 1 2 3 4 5; do printf '\n[handlers.d%s]\nkind = "digest"\nrounds = 10\n' "$i"; done)
"
            port=$started_port
            ;;
        gsoap)
            local gsoap_bin
            gsoap_bin="$("$here/gsoap/build.sh")"
            port="$(free_port)"
            start_bg "$out_dir/gsoap.log" "$gsoap_bin" "$port"
            pid[gsoap]=$bg_pid
            wait_for gSOAP "${pid[gsoap]}" "$out_dir/gsoap.log" 10 port_open "$port"
            url[gsoap]="http://127.0.0.1:$port/"
            return
            ;;
        bare)
            # A bare hyper HTTP/1.1 server answering with the request's body, no SOAP: the
            # floor under any hyper-based server here (lather-bench bare-echo).
            port="$(free_port)"
            start_bg "$out_dir/bare.log" "$LATHER_BENCH" bare-echo --listen "127.0.0.1:$port"
            pid[bare]=$bg_pid
            wait_for bare "${pid[bare]}" "$out_dir/bare.log" 10 port_open "$port"
            ;;
        cxf | cxf-5i)
            jar="${CXF_JAR:-$here/cxf/target/cxf-digest-echo.jar}"
            if [ ! -f "$jar" ] && [ "${SKIP_BUILD:-0}" != "1" ]; then
                jar="$("$here/cxf/build.sh")"
            fi
            [ -f "$jar" ] || die "CXF jar $jar not found (run bench/cxf/build.sh or set CXF_JAR)"
            local interceptors=0
            [ "$1" = cxf-5i ] && interceptors=5
            port="$(free_port)"
            start_bg "$out_dir/$1.log" "$JAVA" -jar "$jar" "$port" 10 "$interceptors"
            pid[$1]=$bg_pid
            wait_for "$1" "${pid[$1]}" "$out_dir/$1.log" 60 port_open "$port"
            ;;
        *) die "unknown server $1 (SERVERS takes lather lather-old lather-w1 lather-np lather-gw lather-gw-old lather-gw-w1 lather-gw-np nginx-gw haproxy-gw lather-5h lather-5h-old lather-pc lather-ws bare gsoap cxf cxf-5i)" ;;
    esac
    url[$1]="http://127.0.0.1:$port/echo"
}

servers=()
for s in $SERVERS; do
    case $s in
        cxf | cxf-5i) command -v "$JAVA" >/dev/null 2>&1 || {
            log "$s skipped: no $JAVA"
            continue
        } ;;
        nginx-gw | haproxy-gw) proxy_installed "${s%-gw}" || {
            log "$s skipped: no ${s%-gw} (apt-get install -y nginx-light haproxy)"
            continue
        } ;;
    esac
    start "$s"
    verify_echo "$s" "${url[$s]}" "$out_dir/probe-$s.json"
    servers+=("$s")
done
# OLD_LATHER alone adds lather-old; a SERVERS list that names an -old server says itself.
if [ -n "${OLD_LATHER:-}" ] && [[ " $SERVERS " != *"-old "* ]]; then
    start lather-old
    verify_echo lather-old "${url[lather-old]}" "$out_dir/probe-lather-old.json"
    servers+=(lather-old)
fi

for s in "${servers[@]}"; do
    case $s in
        cxf | cxf-5i)
            log "$s: ${WARMUP_CXF}s of load for its JIT"
            bench_cmd "${url[$s]}" --connections "$CONNECTIONS" --duration "$WARMUP_CXF" \
                --warmup 0 --quiet --json "$out_dir/warmup-$s.json" >/dev/null
            ;;
    esac
done

wrk_lua="$(echo_wrk_script "$out_dir")"
loads=()
for rate in $RATES; do loads+=("$rate"); done
loads+=(wrk)

declare -A rps p50 p99 cpu
table="$out_dir/table.md"
{
    echo "| round | server | load | req/s | p50 ms | p99 ms | server CPU µs/request |"
    echo "|---|---|---|---:|---:|---:|---:|"
} >"$table"
for ((round = 1; round <= ROUNDS; round++)); do
    for load in "${loads[@]}"; do
        for s in "${servers[@]}"; do
            if [ "$load" = wrk ]; then
                wrk_out="$out_dir/wrk-$s-$round.txt"
                before="$(cpu_ticks "${pid[$s]}")"
                wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$wrk_lua" \
                    "${url[$s]}" >"$wrk_out"
                after="$(cpu_ticks "${pid[$s]}")"
                rps[$s,$load,$round]="$(wrk_stat "$wrk_out" rps)"
                p50[$s,$load,$round]="$(wrk_stat "$wrk_out" p50)"
                p99[$s,$load,$round]="$(wrk_stat "$wrk_out" p99)"
                cpu[$s,$load,$round]="$(awk -v t=$((after - before)) -v hz="$clk_tck" \
                    -v n="$(wrk_stat "$wrk_out" requests)" 'BEGIN { printf "%.1f", t / hz * 1e6 / n }')"
                shown="wrk -t$WRK_THREADS -c$CONNECTIONS (saturated)"
            else
                json="$out_dir/$s-$load-$round.json"
                bench_cmd "${url[$s]}" --connections "$CONNECTIONS" --rate "$load" \
                    --duration "$DURATION" --warmup "$WARMUP" --server-pid "${pid[$s]}" \
                    --quiet --json "$json" >/dev/null
                rps[$s,$load,$round]="$(json_num "$json" rps | xargs printf '%.0f')"
                p50[$s,$load,$round]="$(json_num "$json" p50 | awk '{ printf "%.3fms", $1 / 1000 }')"
                p99[$s,$load,$round]="$(json_num "$json" p99 | awk '{ printf "%.3fms", $1 / 1000 }')"
                cpu[$s,$load,$round]="$(json_num "$json" cpu_us_per_request | xargs printf '%.1f')"
                shown="$load/s open loop"
            fi
            printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$round" "$s" "$shown" \
                "${rps[$s,$load,$round]}" "${p50[$s,$load,$round]}" "${p99[$s,$load,$round]}" \
                "${cpu[$s,$load,$round]}" >>"$table"
        done
    done
done

# The medians over the rounds, and CPU per request against gSOAP's echo at the same load.
summary="$out_dir/summary.md"
{
    echo "| server | load | req/s | server CPU µs/request | CPU vs gSOAP echo |"
    echo "|---|---|---:|---:|---:|"
    for load in "${loads[@]}"; do
        declare -A at=()
        for s in "${servers[@]}"; do
            at[$s]="$(for ((r = 1; r <= ROUNDS; r++)); do echo "${cpu[$s,$load,$r]}"; done | median)"
        done
        for s in "${servers[@]}"; do
            shown="$load/s"
            [ "$load" = wrk ] && shown="saturated (wrk)"
            versus="-"
            [ -n "${at[gsoap]:-}" ] && versus="$(ratio "${at[$s]}" "${at[gsoap]}")"
            printf '| %s | %s | %s | %s | %s |\n' "$s" "$shown" \
                "$(for ((r = 1; r <= ROUNDS; r++)); do echo "${rps[$s,$load,$r]}"; done | median | xargs printf '%.0f')" \
                "${at[$s]}" "$versus"
        done
        unset at
    done
} >"$summary"
log "results in $out_dir"
cat "$table"
echo
cat "$summary"
