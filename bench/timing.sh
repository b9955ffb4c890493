#!/usr/bin/env bash
# The 16-point timing breakdown (issue 13, item 6).
#
# 1. `lather-bench timing` against three echo servers side by side: lather (builtin echo,
#    sending Server-Timing), gSOAP (bench/gsoap) and CXF (bench/cxf, unless SKIP_CXF=1);
#    one client, calls one after another, REQUESTS measured after a warm-up.
# 2. What the server-side points cost: two lather echo servers, phase_metrics on (the
#    default) and off, loaded in turn (ROUNDS rounds, interleaved) with lather-bench
#    (closed loop, CONNECTIONS connections) and wrk (-t1); req/s and server CPU per
#    request (/proc/PID/stat), on/off ratios of the medians.
#
# Environment: REQUESTS=5000 ROUNDS=5 DURATION=5 CONNECTIONS=16 SKIP_BUILD=1 SKIP_CXF=1
#   JAVA=java CXF_JAR (default bench/cxf/target/cxf-digest-echo.jar, built when missing)
# Results: target/bench-results/timing-<timestamp>/ (logs, timing.txt, cost.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

REQUESTS="${REQUESTS:-5000}"
ROUNDS="${ROUNDS:-5}"
DURATION="${DURATION:-5}"
CONNECTIONS="${CONNECTIONS:-16}"
JAVA="${JAVA:-java}"
LATHER="${LATHER:-$repo/target/release/lather}"
LATHER_BENCH="${LATHER_BENCH:-$repo/target/release/lather-bench}"
command -v wrk >/dev/null 2>&1 || die "wrk not found (apt-get install -y wrk)"

build_lather
out="$(results_dir timing)"
log "results in $out"

declare -A port pid
for mode in on off; do
    port[$mode]="$(free_port)"
    flag=true
    [ "$mode" = off ] && flag=false
    # access_log = false: a log line per request would slow the measured server.
    printf '[server]\naccess_log = false\nlisten = "127.0.0.1:%s"\nphase_metrics = %s\n\n[[service]]\nname = "echo"\npath = "/echo"\nbuiltin = "echo"\n' \
        "${port[$mode]}" "$flag" >"$out/$mode.toml"
    start_bg "$out/$mode.log" "$LATHER" serve --config "$out/$mode.toml"
    pid[$mode]=$bg_pid
    wait_for "lather-$mode" "$bg_pid" "$out/$mode.log" 20 health_ok "${port[$mode]}"
done

gsoap_bin="$("$here/gsoap/build.sh")"
gsoap_port="$(free_port)"
start_bg "$out/gsoap.log" "$gsoap_bin" "$gsoap_port"
wait_for gSOAP "$bg_pid" "$out/gsoap.log" 10 port_open "$gsoap_port"
urls=("http://127.0.0.1:${port[on]}/echo" "http://127.0.0.1:$gsoap_port/")

if [ "${SKIP_CXF:-0}" != "1" ]; then
    CXF_JAR="${CXF_JAR:-$here/cxf/target/cxf-digest-echo.jar}"
    [ -f "$CXF_JAR" ] || CXF_JAR="$("$here/cxf/build.sh")"
    cxf_port="$(free_port)"
    # No digest interceptors: a plain CXF echo.
    start_bg "$out/cxf.log" "$JAVA" -jar "$CXF_JAR" "$cxf_port" 1 0
    cxf_ready() { grep -qs '^cxf-digest-echo: http://' "$2" && port_open "$1"; }
    wait_for CXF "$bg_pid" "$out/cxf.log" 60 cxf_ready "$cxf_port" "$out/cxf.log"
    urls+=("http://127.0.0.1:$cxf_port/echo")
fi

log "16-point timing: ${urls[*]}"
"$LATHER_BENCH" timing "${urls[@]}" --requests "$REQUESTS" --warmup 2000 | tee "$out/timing.txt"

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
declare -A rps cpu
for round in $(seq 1 "$ROUNDS"); do
    for mode in on off; do
        log "round $round: phase_metrics $mode"
        json="$out/$mode-$round.json"
        "$LATHER_BENCH" http "http://127.0.0.1:${port[$mode]}/echo" --connections "$CONNECTIONS" \
            --duration "$DURATION" --warmup 1 --server-pid "${pid[$mode]}" --quiet --json "$json" >/dev/null
        rps[lb-$mode,$round]=$(json_num "$json" rps)
        cpu[lb-$mode,$round]=$(json_num "$json" cpu_us_per_request)
        before=$(cpu_ticks "${pid[$mode]}")
        wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -s "$out/post.lua" "http://127.0.0.1:${port[$mode]}/echo" \
            >"$out/wrk-$mode-$round.txt"
        after=$(cpu_ticks "${pid[$mode]}")
        n=$(awk '/requests in/ {print $1}' "$out/wrk-$mode-$round.txt")
        rps[wrk-$mode,$round]=$(awk '/Requests\/sec/ {print $2}' "$out/wrk-$mode-$round.txt")
        cpu[wrk-$mode,$round]=$(awk -v t=$((after - before)) -v hz="$hz" -v n="$n" 'BEGIN {printf "%.2f", t / hz * 1e6 / n}')
    done
done
{
    echo "| generator | req/s on | req/s off | on/off (median of per-round ratios) | CPU µs/req on | CPU µs/req off |"
    echo "|---|---:|---:|---:|---:|---:|"
    for g in lb wrk; do
        r_on=$(for r in $(seq 1 "$ROUNDS"); do echo "${rps[$g-on,$r]}"; done | median)
        r_off=$(for r in $(seq 1 "$ROUNDS"); do echo "${rps[$g-off,$r]}"; done | median)
        c_on=$(for r in $(seq 1 "$ROUNDS"); do echo "${cpu[$g-on,$r]}"; done | median)
        c_off=$(for r in $(seq 1 "$ROUNDS"); do echo "${cpu[$g-off,$r]}"; done | median)
        ratio=$(for r in $(seq 1 "$ROUNDS"); do awk -v a="${rps[$g-on,$r]}" -v b="${rps[$g-off,$r]}" 'BEGIN {printf "%.4f\n", a / b}'; done | median)
        name=lather-bench
        [ "$g" = wrk ] && name="wrk -t1"
        printf '| %s -c%s | %.0f | %.0f | %.3f | %.2f | %.2f |\n' "$name" "$CONNECTIONS" "$r_on" "$r_off" "$ratio" "$c_on" "$c_off"
    done
} >"$out/cost.md"
cat "$out/cost.md"
log "results in $out"
