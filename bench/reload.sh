#!/usr/bin/env bash
# Configuration reloads under load: a gateway (to a lather echo) offered RATE requests/s
# open loop by `lather-bench http` for DURATION seconds while its configuration is
# rewritten and reloaded (SIGHUP) every second, alternating between two valid files (the
# second adds a service and changes the gateway's timeout and balancing). Reports the
# requests sent, answered 200, failed (by kind) and the reloads the log confirms.
# Target: at 2000 req/s no request lost and none answered with an error.
#
# Environment: RATE=2000, DURATION=20, CONNECTIONS=32, LATHER, LATHER_BENCH, SKIP_BUILD=1.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

DURATION="${DURATION:-20}"
bench_defaults
RATE="${RATE:-2000}"
build_lather
out_dir="$(results_dir reload)"

echo_port="$(free_port)"
printf '[server]\n%s\nlisten = "127.0.0.1:%s"\n[[service]]\nname = "echo"\npath = "/echo"\nbuiltin = "echo"\n' \
    "$(access_log_off "$LATHER")" "$echo_port" >"$out_dir/echo.toml"
start_bg "$out_dir/echo.log" "$LATHER" serve --config "$out_dir/echo.toml"
wait_for echo "$bg_pid" "$out_dir/echo.log" 10 health_ok "$echo_port"

port="$(free_port)"
config="$out_dir/gateway.toml"
first="$(printf '[server]\n%s\nlisten = "127.0.0.1:%s"\n[[service]]\nname = "gw"\npath = "/gw"\nupstream = ["http://127.0.0.1:%s/echo"]\ntimeout_ms = 5000\n' \
    "$(access_log_off "$LATHER")" "$port" "$echo_port")"
second="$first
balance = \"least-outstanding\"
[[service]]
name = \"local\"
path = \"/local\"
builtin = \"echo\"
"
second="${second/timeout_ms = 5000/timeout_ms = 4000}"
echo "$first" >"$config"
start_bg "$out_dir/gateway.log" "$LATHER" serve --config "$config" --log-level info
gw=$bg_pid
wait_for gateway "$gw" "$out_dir/gateway.log" 10 health_ok "$port"

json="$out_dir/load.json"
bench_cmd "http://127.0.0.1:$port/gw" --connections "$CONNECTIONS" --rate "$RATE" \
    --duration "$DURATION" --warmup 1 --quiet --json "$json" >"$out_dir/load.txt" &
load=$!
sleep 2
sent=0
for ((i = 1; i <= DURATION - 3; i++)); do
    if ((i % 2)); then echo "$second" >"$config"; else echo "$first" >"$config"; fi
    kill -HUP "$gw"
    sent=$((sent + 1))
    sleep 1
done
wait "$load" || true
reloaded="$(grep -c 'configuration reloaded' "$out_dir/gateway.log" || true)"
refused="$(grep -c 'reload refused' "$out_dir/gateway.log" || true)"
table="$out_dir/table.md"
{
    echo "| offered | requests | answered 200 | failed | reloads sent | reloaded | refused |"
    echo "|---:|---:|---:|---:|---:|---:|---:|"
    printf '| %s/s for %s s | %s | %s | %s | %s | %s | %s |\n' "$RATE" "$DURATION" \
        "$(json_num "$json" requests_total)" "$(json_num "$json" 200)" \
        "$(json_num "$json" requests_failed)" \
        "$sent" "$reloaded" "$refused"
    echo
    echo "load generator's summary:"
    echo '```'
    cat "$out_dir/load.txt"
    echo '```'
} >"$table"
log "results in $out_dir"
cat "$table"
