#!/usr/bin/env bash
# Remote handler stages over NATS, measured on loopback:
#   1. the cost of one remote handler call: a service with one `logging` handler (a 2 KB
#      request), in process vs on a worker — p50/p99 of each, one connection, interleaved;
#   2. throughput of an I/O-bound remote handler (`sleep`, SLEEP_MS) with 1, 2 and 4
#      workers, closed loop with CONNECTIONS connections.
# Starts its own nats-server (Debian's) on a free port; stops everything it started by PID.
#
# Environment: DURATION, WARMUP, CONNECTIONS (default 64 here), ROUNDS, LATHER, SKIP_BUILD
# as the other scripts; SLEEP_MS=10; WORKERS_LIST="1 2 4"; WORKER_CONCURRENCY=8 (requests a
# worker handles at once, so one worker's capacity is 1000/SLEEP_MS × that per second);
# PAYLOAD_BYTES (default 2000).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

CONNECTIONS="${CONNECTIONS:-64}"
PAYLOAD_BYTES="${PAYLOAD_BYTES:-2000}"
bench_defaults
SLEEP_MS="${SLEEP_MS:-10}"
WORKERS_LIST="${WORKERS_LIST:-1 2 4}"
WORKER_CONCURRENCY="${WORKER_CONCURRENCY:-8}"
command -v nats-server >/dev/null || die "nats-server not found (apt-get install -y nats-server)"
out_dir="$(results_dir remote)"
build_lather

start_nats "$out_dir/nats.log"
log "nats-server (pid $nats_pid) on 127.0.0.1:$nats_port"

# config FILE PORT PLACEMENT KIND_LINES : one echo service with handler h.
config() {
    {
        # access_log = false: a log line per request would slow the measured server.
        printf '[server]\naccess_log = false\nlisten = "127.0.0.1:%s"\nmax_in_flight = 4096\nqueue_capacity = 4096\n' "$2"
        printf '[nats]\nurl = "nats://127.0.0.1:%s"\n' "$nats_port"
        printf '[[service]]\nname = "echo"\npath = "/echo"\nbuiltin = "echo"\nrequest = [["h"]]\n'
        printf '[handlers.h]\n%s\nplacement = "%s"\n' "$4" "$3"
    } >"$1"
}

# serve CONFIG NAME: starts lather serve, waits for /health; its PID in $bg_pid.
serve() {
    start_bg "$out_dir/$2.log" "$LATHER" --log-level warn serve --config "$1"
}

# worker CONFIG NAME
worker() {
    start_bg "$out_dir/$2.log" "$LATHER" --log-level warn worker --config "$1" --handlers h \
        --concurrency "$WORKER_CONCURRENCY"
}

# load URL NAME CONNECTIONS
load() {
    bench_cmd "$1" --connections "$3" --duration "$DURATION" --warmup "$WARMUP" --quiet \
        --payload-bytes "$PAYLOAD_BYTES" --json "$out_dir/$2.json" >/dev/null
}

echo
echo "1. One remote handler call (logging, ${PAYLOAD_BYTES}-byte payload, 1 connection):"
printf '%-8s %-4s %10s %10s %10s\n' placement run "p50 µs" "p99 µs" "req/s"
for ((round = 1; round <= ROUNDS; round++)); do
    for placement in local remote; do
        port="$(free_port)"
        config "$out_dir/call-$placement.toml" "$port" "$placement" 'kind = "logging"'
        serve "$out_dir/call-$placement.toml" "serve-call-$placement"
        wait_for lather "$bg_pid" "$out_dir/serve-call-$placement.log" 10 health_ok "$port"
        if [ "$placement" = remote ]; then
            worker "$out_dir/call-$placement.toml" "worker-call"
            sleep 0.5
        fi
        load "http://127.0.0.1:$port/echo" "call-$placement-$round" 1
        f="$out_dir/call-$placement-$round.json"
        printf '%-8s %-4s %10s %10s %10.0f\n' "$placement" "$round" \
            "$(sed -n '/"latency_us"/,/}/s/^ *"p50": \([0-9]*\).*/\1/p' "$f")" \
            "$(sed -n '/"latency_us"/,/}/s/^ *"p99": \([0-9]*\).*/\1/p' "$f")" \
            "$(json_num "$f" rps)"
        # stop this round's server and worker, keep nats-server
        for pid in "${bench_pids[@]}"; do
            [ "$pid" = "$nats_pid" ] && continue
            kill -TERM "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        done
        bench_pids=("$nats_pid")
    done
done

echo
echo "2. Throughput of a remote I/O-bound handler (sleep ${SLEEP_MS} ms, $CONNECTIONS connections, $WORKER_CONCURRENCY at once per worker):"
printf '%-8s %10s %10s\n' workers "req/s" "p50 ms"
port="$(free_port)"
config "$out_dir/scale.toml" "$port" remote "kind = \"sleep\"
millis = $SLEEP_MS"
serve "$out_dir/scale.toml" "serve-scale"
wait_for lather "$bg_pid" "$out_dir/serve-scale.log" 10 health_ok "$port"
started=0
for workers in $WORKERS_LIST; do
    while [ "$started" -lt "$workers" ]; do
        started=$((started + 1))
        worker "$out_dir/scale.toml" "worker-scale-$started"
    done
    sleep 0.5
    load "http://127.0.0.1:$port/echo" "scale-$workers" "$CONNECTIONS"
    f="$out_dir/scale-$workers.json"
    printf '%-8s %10.1f %10s\n' "$workers" "$(json_num "$f" rps)" \
        "$(awk -v us="$(sed -n '/"latency_us"/,/}/s/^ *"p50": \([0-9]*\).*/\1/p' "$f")" 'BEGIN { printf "%.2f", us / 1000 }')"
done
log "results in $out_dir"
