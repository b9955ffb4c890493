#!/usr/bin/env bash
# TLS echo against plain-HTTP echo, side by side: two lather servers with the same echo
# service, one with [server.tls] (a P-256 certificate made here with openssl), driven in
# turn by wrk (Debian's package, keep-alive connections, saturated); the server's CPU per
# request read from /proc/PID/stat before and after each run. Target: TLS req/s >= 80% of
# plain.
#
# Environment: DURATION=10, CONNECTIONS=32, ROUNDS=3, WRK_THREADS=2, PAYLOAD_BYTES=100,
# LATHER (default target/release/lather), SKIP_BUILD=1.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

ROUNDS="${ROUNDS:-3}"
bench_defaults

WRK_THREADS="${WRK_THREADS:-2}"
command -v wrk >/dev/null 2>&1 || die "wrk not found (apt-get install -y wrk)"
command -v openssl >/dev/null 2>&1 || die "openssl not found (to make the test certificate)"
build_lather
out_dir="$(results_dir tls)"
clk_tck="$(getconf CLK_TCK 2>/dev/null || echo 100)"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
    -keyout "$out_dir/key.pem" -out "$out_dir/cert.pem" 2>/dev/null

declare -A url pid
start() { # NAME TLS-TABLE
    local port config
    port="$(free_port)"
    config="$out_dir/$1.toml"
    printf '[server]\n%s\nlisten = "127.0.0.1:%s"\n%s\n[[service]]\nname = "echo"\npath = "/echo"\nbuiltin = "echo"\n' \
        "$(access_log_off "$LATHER")" "$port" "$2" >"$config"
    start_bg "$out_dir/$1.log" "$LATHER" serve --config "$config"
    pid[$1]=$bg_pid
    wait_for "$1" "${pid[$1]}" "$out_dir/$1.log" 10 port_open "$port"
}
start plain ""
start tls "$(printf '[server.tls]\ncert_file = "%s"\nkey_file = "%s"\n' "$out_dir/cert.pem" "$out_dir/key.pem")"
url[plain]="http://127.0.0.1:$(sed -n 's/^listen = "127.0.0.1:\(.*\)"/\1/p' "$out_dir/plain.toml")/echo"
url[tls]="https://127.0.0.1:$(sed -n 's/^listen = "127.0.0.1:\(.*\)"/\1/p' "$out_dir/tls.toml")/echo"

wrk_lua="$(echo_wrk_script "$out_dir")"
body="$out_dir/request.xml"
for s in plain tls; do
    curl -sS --cacert "$out_dir/cert.pem" -X POST -H 'Content-Type: text/xml; charset=utf-8' \
        -H 'SOAPAction: "urn:lather:echo#echo"' --data-binary "@$body" "${url[$s]}" \
        | grep -q 'urn:lather:echo' || die "$s: the probe request was not echoed"
    log "$s: probe request OK"
done

table="$out_dir/table.md"
{
    echo "| round | server | req/s | p50 | p99 | non-2xx | server CPU µs/request |"
    echo "|---|---|---:|---:|---:|---:|---:|"
} >"$table"
declare -A rps
for ((round = 1; round <= ROUNDS; round++)); do
    for s in plain tls; do
        before="$(cpu_ticks "${pid[$s]}")"
        wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$wrk_lua" "${url[$s]}" \
            >"$out_dir/wrk-$s-$round.txt"
        after="$(cpu_ticks "${pid[$s]}")"
        f="$out_dir/wrk-$s-$round.txt"
        reqs="$(wrk_stat "$f" requests)"
        rps[$s,$round]="$(wrk_stat "$f" rps)"
        cpu="$(awk -v t=$((after - before)) -v hz="$clk_tck" -v n="$reqs" 'BEGIN { printf "%.1f", t / hz * 1e6 / n }')"
        printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$round" "$s" "${rps[$s,$round]}" \
            "$(wrk_stat "$f" p50)" "$(wrk_stat "$f" p99)" "$(wrk_stat "$f" non2xx)" "$cpu" >>"$table"
    done
done
plain_med="$(median_over rps plain)"
tls_med="$(median_over rps tls)"
{
    echo
    echo "median req/s: plain $plain_med, TLS $tls_med; TLS/plain = $(ratio "$tls_med" "$plain_med") (target >= 0.80)"
} >>"$table"
log "results in $out_dir"
cat "$table"
