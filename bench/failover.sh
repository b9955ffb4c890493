#!/usr/bin/env bash
# A gateway in front of two backends, one of them broken, under wrk (keep-alive, saturated):
#   drop   — the broken backend silently drops connection attempts (a listener whose accept
#            queue is full: the kernel drops further SYNs), connect_timeout_ms = 200;
#   silent — it accepts connections and never answers; the operation is listed in
#            idempotent_operations with try_timeout_ms = 200.
# The healthy backend is a lather echo. timeout_ms is 5000. Reports req/s, p50, p99, max
# and non-2xx answers per scenario, and the broken backend's failures and state from the
# gateway's /metrics. Targets: p99 <= 2 x connect timeout (400 ms); no request waits the
# whole timeout (max < 5000 ms).
#
# Environment: DURATION=10, CONNECTIONS=8, WRK_THREADS=2, LATHER, SKIP_BUILD=1.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

CONNECTIONS="${CONNECTIONS:-8}"
bench_defaults
WRK_THREADS="${WRK_THREADS:-2}"
command -v wrk >/dev/null 2>&1 || die "wrk not found (apt-get install -y wrk)"
build_lather
out_dir="$(results_dir failover)"

# The healthy backend.
echo_port="$(free_port)"
printf '[server]\n%s\nlisten = "127.0.0.1:%s"\n[[service]]\nname = "echo"\npath = "/echo"\nbuiltin = "echo"\n' \
    "$(access_log_off "$LATHER")" "$echo_port" >"$out_dir/echo.toml"
start_bg "$out_dir/echo.log" "$LATHER" serve --config "$out_dir/echo.toml"
wait_for echo "$bg_pid" "$out_dir/echo.log" 10 health_ok "$echo_port"

# The broken backends: one whose accept queue is full (SYNs dropped), one that accepts
# and never answers.
drop_port="$(free_port)"
start_bg "$out_dir/drop.log" python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(0)
held = []
for _ in range(3):
    c = socket.socket(); c.setblocking(False)
    try: c.connect(("127.0.0.1", int(sys.argv[1])))
    except BlockingIOError: pass
    held.append(c)
time.sleep(3600)' "$drop_port"
silent_port="$(free_port)"
start_bg "$out_dir/silent.log" python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1024)
held = []
while True:
    c, _ = s.accept(); held.append(c)' "$silent_port"
sleep 0.5

wrk_lua="$(echo_wrk_script "$out_dir")"

table="$out_dir/table.md"
{
    echo "| scenario | req/s | p50 | p99 | max | non-2xx | broken backend: failures (kind) | its state at the end |"
    echo "|---|---:|---:|---:|---:|---:|---|---:|"
} >"$table"
run() { # NAME BROKEN-PORT EXTRA-KEYS KIND
    local port config gw f broken
    port="$(free_port)"
    config="$out_dir/gateway-$1.toml"
    broken="http://127.0.0.1:$2/echo"
    printf '[server]\n%s\nlisten = "127.0.0.1:%s"\n[[service]]\nname = "gw"\npath = "/gw"\nupstream = ["%s", "http://127.0.0.1:%s/echo"]\ntimeout_ms = 5000\n%s\n' \
        "$(access_log_off "$LATHER")" "$port" "$broken" "$echo_port" "$3" >"$config"
    start_bg "$out_dir/gateway-$1.log" "$LATHER" serve --config "$config"
    gw=$bg_pid
    wait_for "gateway-$1" "$gw" "$out_dir/gateway-$1.log" 10 health_ok "$port"
    f="$out_dir/wrk-$1.txt"
    wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency --timeout 10s -s "$wrk_lua" \
        "http://127.0.0.1:$port/gw" >"$f"
    printf '| %s | %s | %s | %s | %s | %s | %s (%s) | %s |\n' "$1" \
        "$(wrk_stat "$f" rps)" "$(wrk_stat "$f" p50)" "$(wrk_stat "$f" p99)" \
        "$(wrk_stat "$f" max)" "$(wrk_stat "$f" non2xx)" \
        "$(metric_value "$port" "lather_upstream_failures_total{service=\"gw\",backend=\"$broken\",kind=\"$4\"}")" "$4" \
        "$(metric_value "$port" "lather_upstream_state{service=\"gw\",backend=\"$broken\"}")" >>"$table"
    kill -TERM "$gw" 2>/dev/null || true
}
run drop "$drop_port" "connect_timeout_ms = 200" connect_timeout
run silent "$silent_port" "connect_timeout_ms = 200
idempotent_operations = [\"echo\"]
try_timeout_ms = 200" timeout
echo >>"$table"
echo "targets: p99 <= 400 ms (2 x connect_timeout_ms); max < 5000 ms (timeout_ms); state 1 = ejected" >>"$table"
log "results in $out_dir"
cat "$table"
