#!/usr/bin/env bash
# Instructions per remote handler call, counted by valgrind's callgrind on both sides of
# `lather-bench remote-call` (a `logging` handler on a 2 KB message): the `lather worker`
# (every instruction of its process, per call) and the caller (the instructions in its
# `RemoteHandler::attempt`, callees included: framing the request, sending it, taking the
# answer and its verdict). A figure that does not move with the host's load, for telling
# small changes to the remote path apart; W and lather's own part in microseconds come from
# `lather-bench remote-call` itself.
#
# The worker runs under callgrind as a process of its own, started here; the bench's own
# worker is replaced by a placeholder that only waits, so every call reaches the measured
# one. Starts its own nats-server on a free loopback port; stops what it started by PID.
#
# Environment: N=2000 (measured calls), WARM=100 (calls before them, counted too: the
# worker's counts are zeroed once it is ready, before either), TOP=30, LATHER,
# LATHER_BENCH, SKIP_BUILD=1. Needs valgrind, nats-server and python3.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

bench_defaults
N="${N:-2000}"
WARM="${WARM:-100}"
TOP="${TOP:-30}"
command -v valgrind >/dev/null 2>&1 || die "valgrind not found (apt-get install -y valgrind)"
command -v callgrind_control >/dev/null 2>&1 || die "callgrind_control not found"
command -v nats-server >/dev/null || die "nats-server not found (apt-get install -y nats-server)"
build_lather
out_dir="$(results_dir remote-instructions)"

start_nats "$out_dir/nats.log"

printf '[nats]\nurl = "nats://127.0.0.1:%s"\n\n[handlers.h]\nkind = "logging"\nplacement = "remote"\nfallback = "fault"\n' \
    "$nats_port" >"$out_dir/worker.toml"
worker_counts="$out_dir/worker.callgrind"
log "starting lather worker under callgrind"
callgrind_cmd "$worker_counts"
start_bg "$out_dir/worker.log" "${callgrind[@]}" \
    "$LATHER" --log-level warn,lather_remote::worker=info worker --config "$out_dir/worker.toml" --handlers h
vg=$bg_pid
wait_for worker "$vg" "$out_dir/worker.log" 120 grep -q "lather worker ready" "$out_dir/worker.log"
callgrind_control -z "$vg" >/dev/null

# The bench starts a worker of its own through --worker-wrap: this placeholder takes its
# place and only waits (the bench stops it by PID at the end).
placeholder="$out_dir/placeholder.sh"
printf '#!/bin/sh\nexec sleep 3600\n' >"$placeholder"
chmod +x "$placeholder"
caller_counts="$out_dir/caller.callgrind"
log "calling it $((WARM + N)) times from lather-bench under callgrind"
callgrind_cmd "$caller_counts"
LATHER_BIN="$LATHER" "${callgrind[@]}" \
    "$LATHER_BENCH" --log-level warn remote-call --nats "nats://127.0.0.1:$nats_port" \
    --calls "$N" --warmup "$WARM" --out "$out_dir" --worker-wrap "$placeholder" \
    >"$out_dir/caller.log" 2>&1 || die "remote-call failed: $(tail -3 "$out_dir/caller.log")"
callgrind_control -d "$vg" >/dev/null
stop_all

calls=$((WARM + N))
{
    echo "worker:"
    python3 "$here/instructions.py" "$worker_counts.1" "$calls" "$TOP"
    echo "caller:"
    python3 "$here/instructions.py" "$caller_counts" "$calls" 0 'RemoteHandler::attempt::\{\{closure\}\}$'
} | tee "$out_dir/summary.txt"
log "written to $out_dir"
