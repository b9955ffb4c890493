#!/usr/bin/env bash
# Instructions per request of a lather echo server, counted by valgrind's callgrind: a
# figure that does not move with the host's load, for telling small changes apart (server
# CPU time on these shared VMs moves by ±3% from run to run). The server runs under
# callgrind (about 50× slower); a closed-loop generator sends WARM requests, the counts are
# zeroed, N more are sent and the counts dumped. Prints the instructions per request and
# the functions that execute most of them (their own instructions, callees excluded).
#
# Environment: N=5000, WARM=1000, CONNECTIONS=4, TOP=40, LATHER (binary; e.g. a build of
# an earlier commit), LATHER_BENCH, SKIP_BUILD=1. Needs valgrind and python3.
# Also: BARE=1 counts the bare hyper server (`lather-bench bare-echo`) instead; GATEWAY=1
# counts a lather gateway whose backend, a lather echo, runs in another process outside
# callgrind (only the gateway's instructions are counted); DIGESTS=1 counts echo with the
# five digest(10) request handlers of bench/efficiency.sh's lather-5h (DIGEST_ROUNDS=0: five
# digest handlers that hash nothing, the engine's own cost of a stage of five handlers).
# SERVER_EXTRA adds lines to the servers' [server] table (e.g. "phase_metrics = false").
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

bench_defaults
N="${N:-5000}"
WARM="${WARM:-1000}"
CONNECTIONS="${CONNECTIONS:-4}"
TOP="${TOP:-40}"
server_extra="${SERVER_EXTRA:-}"
command -v valgrind >/dev/null 2>&1 || die "valgrind not found (apt-get install -y valgrind)"
command -v callgrind_control >/dev/null 2>&1 || die "callgrind_control not found"
build_lather
out_dir="$(results_dir instructions)"
port="$(free_port)"
counts="$out_dir/callgrind.out"

# lather_config FILE PORT SERVICE_TOML : a config listening on PORT with SERVICE_TOML.
lather_config() {
    printf '[server]\nlisten = "127.0.0.1:%s"\n%s\n%s\n\n[[service]]\n%s\n' \
        "$2" "$(access_log_off "$LATHER")" "$server_extra" "$3" >"$1"
}
echo_service='name = "echo"
path = "/echo"
builtin = "echo"'

if [ "${BARE:-0}" = "1" ]; then
    server=("$LATHER_BENCH" bare-echo --listen "127.0.0.1:$port")
    ready() { port_open "$port"; }
elif [ "${GATEWAY:-0}" = "1" ]; then
    backend_port="$(free_port)"
    lather_config "$out_dir/backend.toml" "$backend_port" "$echo_service"
    start_bg "$out_dir/backend.log" "$LATHER" serve --config "$out_dir/backend.toml"
    wait_for backend "$bg_pid" "$out_dir/backend.log" 30 health_ok "$backend_port"
    lather_config "$out_dir/gateway.toml" "$port" 'name = "gateway"
path = "/echo"
upstream = ["http://127.0.0.1:'"$backend_port"'/echo"]'
    server=("$LATHER" serve --config "$out_dir/gateway.toml")
    ready() { health_ok "$port"; }
else
    if [ "${DIGESTS:-0}" = "1" ]; then
        # Under callgrind a digest takes far longer than on the CPU, and would go to the
        # CPU pool; at full speed it takes about 2.5 µs and runs inline (below 50 µs).
        server_extra="${server_extra}
cpu_inline_micros = 1000000000"
        echo_service="${echo_service}
request = [[\"d1\", \"d2\", \"d3\", \"d4\", \"d5\"]]
$(for i in 1 2 3 4 5; do printf '\n[handlers.d%s]\nkind = "digest"\nrounds = %s\n' "$i" "${DIGEST_ROUNDS:-10}"; done)"
    fi
    lather_config "$out_dir/echo.toml" "$port" "$echo_service"
    server=("$LATHER" serve --config "$out_dir/echo.toml")
    ready() { health_ok "$port"; }
fi

log "starting ${server[0]##*/} under callgrind on port $port"
callgrind_cmd "$counts"
start_bg "$out_dir/server.log" "${callgrind[@]}" "${server[@]}"
vg=$bg_pid
wait_for server "$vg" "$out_dir/server.log" 120 ready

send() {
    "$LATHER_BENCH" http "http://127.0.0.1:$port/echo" --connections "$CONNECTIONS" \
        --requests "$1" --duration 600 --quiet
}
send "$WARM" >/dev/null
callgrind_control -z "$vg" >/dev/null
send "$N" >"$out_dir/generator.txt"
callgrind_control -d "$vg" >/dev/null
grep -q "status     200: $N" "$out_dir/generator.txt" ||
    die "not every request was answered 200: $(cat "$out_dir/generator.txt")"
stop_all

python3 "$here/instructions.py" "$counts.1" "$N" "$TOP" | tee "$out_dir/summary.txt"
log "written to $out_dir"
