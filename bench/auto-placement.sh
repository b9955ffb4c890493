#!/usr/bin/env bash
# Automatic placement (placement = "auto") on ONE machine, honestly split in two:
#   the server (lather serve) pinned to core SERVER_CORE (taskset), a worker (lather worker)
#   pinned to core WORKER_CORE; nats-server and the load generator are not pinned and take
#   their share of both cores.
# One echo service with two handlers in sequence: `log` (logging, cheap) then `hash` (digest,
# DIGEST_ROUNDS SHA-256 rounds over the request: CPU-bound). Both placed "local", then both
# "remote", then both "auto"; closed loop with CONNECTIONS connections, DURATION seconds.
# Reports throughput and latency per placement and, for auto, where each handler ran (the
# auto_local_calls / auto_remote_calls counters of /metrics) and its two estimates.
# Starts its own nats-server on a free port; stops everything it started by PID.
#
# Environment: DURATION, WARMUP, CONNECTIONS (default 16 here), ROUNDS, LATHER, SKIP_BUILD
# as the other scripts; PAYLOAD_BYTES (default 2000); DIGEST_ROUNDS=400;
# SERVER_CORE=0; WORKER_CORE=1; WORKER_CONCURRENCY=8; PLACEMENTS="local remote auto".
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

CONNECTIONS="${CONNECTIONS:-16}"
PAYLOAD_BYTES="${PAYLOAD_BYTES:-2000}"
bench_defaults
DIGEST_ROUNDS="${DIGEST_ROUNDS:-400}"
SERVER_CORE="${SERVER_CORE:-0}"
WORKER_CORE="${WORKER_CORE:-1}"
WORKER_CONCURRENCY="${WORKER_CONCURRENCY:-8}"
PLACEMENTS="${PLACEMENTS:-local remote auto}"
unset SERVER_CPUS # this script pins each process itself
command -v nats-server >/dev/null || die "nats-server not found (apt-get install -y nats-server)"
command -v taskset >/dev/null || die "taskset not found (util-linux)"
command -v curl >/dev/null || die "curl not found"
out_dir="$(results_dir auto-placement)"
build_lather

start_nats "$out_dir/nats.log"
log "nats-server (pid $nats_pid) on 127.0.0.1:$nats_port"

# config FILE PORT PLACEMENT : the echo service with handlers log and hash.
config() {
    {
        # access_log = false: a log line per request would slow the measured server.
        printf '[server]\naccess_log = false\nlisten = "127.0.0.1:%s"\nmax_in_flight = 4096\nqueue_capacity = 4096\n' "$2"
        printf '[nats]\nurl = "nats://127.0.0.1:%s"\n' "$nats_port"
        printf '[[service]]\nname = "echo"\npath = "/echo"\nbuiltin = "echo"\nrequest = [["log"], ["hash"]]\n'
        printf '[handlers.log]\nkind = "logging"\nplacement = "%s"\n' "$3"
        printf '[handlers.hash]\nkind = "digest"\nrounds = %s\nplacement = "%s"\n' "$DIGEST_ROUNDS" "$3"
    } >"$1"
}

# metric TEXT NAME HANDLER : the value of lather_NAME for handler HANDLER in /metrics TEXT.
metric() {
    printf '%s\n' "$1" | sed -n "s/^lather_$2{.*handler=\"$3\".*} \\([0-9]*\\)\$/\\1/p" | head -n1
}

# latency FILE PERCENTILE : that latency of a load report, in ms.
latency() {
    awk -v us="$(sed -n "/\"latency_us\"/,/}/s/^ *\"$2\": \\([0-9]*\\).*/\\1/p" "$1")" \
        'BEGIN { printf "%.2f", us / 1000 }'
}

echo
echo "Automatic placement: server on core $SERVER_CORE, worker on core $WORKER_CORE;"
echo "handlers log (logging) then hash (digest, $DIGEST_ROUNDS rounds); ${PAYLOAD_BYTES}-byte payload;"
echo "$CONNECTIONS connections, closed loop, ${DURATION} s per run."
printf '%-9s %-4s %9s %9s %9s   %s\n' placement run "req/s" "p50 ms" "p99 ms" \
    "where auto ran each handler (local/remote calls; estimates local/remote µs)"
for ((round = 1; round <= ROUNDS; round++)); do
    for placement in $PLACEMENTS; do
        port="$(free_port)"
        cfg="$out_dir/$placement.toml"
        config "$cfg" "$port" "$placement"
        start_bg "$out_dir/serve-$placement-$round.log" env LATHER_CPU_THREADS=1 \
            taskset -c "$SERVER_CORE" "$LATHER" --log-level warn serve --config "$cfg"
        serve_pid=$bg_pid
        wait_for lather "$serve_pid" "$out_dir/serve-$placement-$round.log" 10 health_ok "$port"
        if [ "$placement" != local ]; then
            start_bg "$out_dir/worker-$placement-$round.log" env LATHER_CPU_THREADS=1 \
                taskset -c "$WORKER_CORE" "$LATHER" --log-level warn worker --config "$cfg" \
                --handlers log,hash --concurrency "$WORKER_CONCURRENCY"
            sleep 0.5
        fi
        f="$out_dir/$placement-$round.json"
        bench_cmd "http://127.0.0.1:$port/echo" --connections "$CONNECTIONS" \
            --duration "$DURATION" --warmup "$WARMUP" --quiet \
            --payload-bytes "$PAYLOAD_BYTES" --json "$f" >/dev/null
        where="-"
        if [ "$placement" = auto ]; then
            text="$(curl -sS "http://127.0.0.1:$port/metrics")"
            printf '%s\n' "$text" >"$out_dir/metrics-$placement-$round.txt"
            where=""
            for h in log hash; do
                where+="$h $(metric "$text" auto_local_calls_total "$h")/$(metric "$text" auto_remote_calls_total "$h")"
                where+=" ($(metric "$text" auto_local_estimate_micros "$h")/$(metric "$text" auto_remote_estimate_micros "$h") µs)  "
            done
        fi
        printf '%-9s %-4s %9.0f %9s %9s   %s\n' "$placement" "$round" "$(json_num "$f" rps)" \
            "$(latency "$f" p50)" "$(latency "$f" p99)" "$where"
        # stop this run's server and worker, keep nats-server
        for pid in "${bench_pids[@]}"; do
            [ "$pid" = "$nats_pid" ] && continue
            kill -TERM "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        done
        bench_pids=("$nats_pid")
    done
done
log "results in $out_dir"
