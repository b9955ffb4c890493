#!/usr/bin/env bash
# Remote handler stages across a (virtual) network: the workers in their own network
# namespace, NATS and the server in another, joined by a veth pair, with ~DELAY_US µs
# added each way (RTT ≈ 2 × DELAY_US) by `lather-bench delay-proxy`: this kernel has no
# `netem` qdisc, so the delay is made in user space, on the workers' side.
#
# Topology (both namespaces are created here and deleted on exit):
#
#   ns lather-srv-PID                               ns lather-wrk-PID
#   nats-server 0.0.0.0:4222                        delay-proxy 127.0.0.1:4222
#   lather-bench (server + caller)                    → 10.200.0.1:4222, DELAY_US each way
#     nats://127.0.0.1:4222 (loopback)              lather worker × N
#                                                     nats://127.0.0.1:4222 (→ the proxy)
#   veth lvs-PID 10.200.0.1/24  <───── veth ─────>  veth lvw-PID 10.200.0.2/24
#
# Every byte between a worker and NATS crosses the veth and the proxy; the server's own
# NATS connection stays on its loopback (NATS runs beside the server, as on one machine of
# a LAN with the workers on another). Both sides use the same URL, nats://127.0.0.1:4222:
# loopback is per namespace.
#
# Runs: the RTT probes (NATS PING/PONG: server side, worker side through the proxy, worker
# side straight over the veth); (a) `lather-bench remote-call`; (b) `lather-bench stage-layouts`
# for each set in SETS, A–E on WORKERS workers. Needs root (ip netns).
#
# Environment: DELAY_US=100, WORKERS=2, SETS="io cpu", REQUESTS=100 (stage layouts,
# per configuration), CALLS=5000 (remote-call), STEP_TIMEOUT=900 (seconds per step), LATHER,
# LATHER_BENCH, SKIP_BUILD as the other scripts.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

bench_defaults
DELAY_US="${DELAY_US:-100}"
WORKERS="${WORKERS:-2}"
SETS="${SETS:-io cpu}"
REQUESTS="${REQUESTS:-100}"
CALLS="${CALLS:-5000}"
STEP_TIMEOUT="${STEP_TIMEOUT:-900}"
[ "$(id -u)" = 0 ] || die "needs root (ip netns, veth)"
command -v nats-server >/dev/null || die "nats-server not found (apt-get install -y nats-server)"
command -v ip >/dev/null || die "ip (iproute2) not found"

srv_ns="lather-srv-$$"
wrk_ns="lather-wrk-$$"
srv_if="lvs$$"
wrk_if="lvw$$"
srv_ip=10.200.0.1
wrk_ip=10.200.0.2
nats_port=4222
url="nats://127.0.0.1:$nats_port"

# Stops what start_bg started (by PID), then whatever still runs inside the two
# namespaces made here (workers orphaned by a timed-out bench), then deletes them (which
# deletes the veth pair too).
cleanup() {
    local ns pid
    stop_all
    for ns in "$wrk_ns" "$srv_ns"; do
        ip netns list 2>/dev/null | grep -qw "^$ns" || continue
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            log "stopping pid $pid left in $ns"
            kill -TERM "$pid" 2>/dev/null || true
        done
        sleep 0.5
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            kill -KILL "$pid" 2>/dev/null || true
        done
        ip netns del "$ns" 2>/dev/null || true
    done
    ip link del "$srv_if" 2>/dev/null || true
}
trap cleanup EXIT

out_dir="$(results_dir remote-netns)"
build_lather
LATHER="$(cd "$(dirname "$LATHER")" && pwd)/$(basename "$LATHER")"
LATHER_BENCH="$(cd "$(dirname "$LATHER_BENCH")" && pwd)/$(basename "$LATHER_BENCH")"
# The experiments start their `lather worker` processes from this binary.
export LATHER_BIN="$LATHER"

in_srv() { ip netns exec "$srv_ns" "$@"; }
in_wrk() { ip netns exec "$wrk_ns" "$@"; }

log "namespaces $srv_ns ($srv_ip) and $wrk_ns ($wrk_ip), veth $srv_if <-> $wrk_if"
ip netns add "$srv_ns"
ip netns add "$wrk_ns"
ip link add "$srv_if" type veth peer name "$wrk_if"
ip link set "$srv_if" netns "$srv_ns"
ip link set "$wrk_if" netns "$wrk_ns"
in_srv ip link set lo up
in_wrk ip link set lo up
in_srv ip addr add "$srv_ip/24" dev "$srv_if"
in_wrk ip addr add "$wrk_ip/24" dev "$wrk_if"
in_srv ip link set "$srv_if" up
in_wrk ip link set "$wrk_if" up

# ns_port_open NS HOST PORT : something accepts on HOST:PORT inside NS.
ns_port_open() {
    # shellcheck disable=SC2016 # expanded by the inner bash
    timeout 1 ip netns exec "$1" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$2" "$3" 2>/dev/null
}

start_bg "$out_dir/nats.log" ip netns exec "$srv_ns" nats-server -a 0.0.0.0 -p "$nats_port"
wait_for nats-server "$bg_pid" "$out_dir/nats.log" 10 ns_port_open "$srv_ns" 127.0.0.1 "$nats_port"
start_bg "$out_dir/delay-proxy.log" ip netns exec "$wrk_ns" "$LATHER_BENCH" delay-proxy \
    --listen "127.0.0.1:$nats_port" --to "$srv_ip:$nats_port" --delay-us "$DELAY_US"
wait_for delay-proxy "$bg_pid" "$out_dir/delay-proxy.log" 10 ns_port_open "$wrk_ns" 127.0.0.1 "$nats_port"
log "nats-server in $srv_ns, delay proxy (${DELAY_US} µs each way) in $wrk_ns"

{
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ); cores: $(nproc); kernel: $(uname -r)"
    echo "nats-server: $(nats-server --version 2>&1)"
    echo "delay: ${DELAY_US} µs each way, user space (lather-bench delay-proxy)"
    echo
    echo "NATS PING/PONG round trip, µs (1000 probes after 100):"
    printf '%-44s %s\n' "server side, loopback:" \
        "$(in_srv "$LATHER_BENCH" nats-rtt --nats "$url")"
    printf '%-44s %s\n' "worker side, veth + delay proxy:" \
        "$(in_wrk "$LATHER_BENCH" nats-rtt --nats "$url")"
    printf '%-44s %s\n' "worker side, veth only (no proxy):" \
        "$(in_wrk "$LATHER_BENCH" nats-rtt --nats "nats://$srv_ip:$nats_port")"
} | tee "$out_dir/rtt.txt"

wrap="ip netns exec $wrk_ns"
log "(a) remote-call, the worker in $wrk_ns"
timeout "$STEP_TIMEOUT" ip netns exec "$srv_ns" "$LATHER_BENCH" --log-level warn remote-call \
    --nats "$url" --calls "$CALLS" --out "$out_dir" --worker-wrap "$wrap"

for set in $SETS; do
    log "(b) stage-layouts --set $set, A–E on $WORKERS workers in $wrk_ns"
    timeout "$STEP_TIMEOUT" ip netns exec "$srv_ns" "$LATHER_BENCH" --log-level warn stage-layouts \
        --set "$set" --requests "$REQUESTS" --warmup 1 --nats "$url" --workers "$WORKERS" \
        --out "$out_dir" --worker-wrap "$wrap"
done

log "delay proxy's per-connection lateness (chunk sent after its due time):"
stop_all
grep 'connection' "$out_dir/delay-proxy.log" | tail -n 20 >&2 || true
log "results in $out_dir"
