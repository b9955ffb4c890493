#!/usr/bin/env bash
# What DSCP marking buys (WS-QoS traffic classes; the seed's DiffServ experiment): SOAP
# answers cross a congested router whose egress toward the client gives DSCP 10 (AF11,
# TOS 0x28) a guaranteed, first-served class and everything else a best-effort class with
# a deep queue; bulk TCP streams from the server's side fill the best-effort queue. wrk in
# the client namespace measures a lather echo in the server namespace (a) marking its
# answers (a `[[qos.client]]` rule gives the client's address class `gold`, dscp 10) and
# (b) not marking them (no `[qos]` at all), ROUNDS rounds alternating, medians; then the
# same two with the background stopped (the idle link, for reference).
#
# Topology (all three namespaces are created here and deleted on exit):
#
#   ns qb-srv-PID                 ns qb-rtr-PID                       ns qb-cli-PID
#   lather marked  :8081          ip_forward                          wrk
#   lather plain   :8082          egress to the client: BOTTLENECK    bulk sink :5201
#   bulk source ──────────────►   htb (or tbf+prio) ───────────────►
#   qbs-PID 10.210.1.1/24 <──> qbr1-PID 10.210.1.2/24
#                                 qbr2-PID 10.210.2.1/24 <──────────> qbc-PID 10.210.2.2/24
#
# Router egress toward the client (the only shaped link; requests and ACKs go unshaped):
#   htb root 1: rate BOTTLENECK_MBIT
#     1:10 DSCP 10 (u32 match ip tos 0x28 0xfc): rate GOLD_SHARE % of it, ceil all, prio 0, pfifo 100
#     1:20 everything else:                      the rest,          ceil all, prio 1, bfifo BE_QUEUE_KB
# If htb is missing, tbf (the shaper) with a two-band prio under it; if neither is there
# the script says so and stops. (This kernel has no netem; nothing here needs it.)
#
# Server CPU per request: utime + stime of the lather process (/proc/PID/stat) over a run,
# divided by the requests wrk completed. lather pinned to CPU 1, wrk to CPU 0 (when there
# are two CPUs or more); the bulk streams and the forwarding are not pinned.
#
# Environment: ROUNDS=3 DURATION=15 CONNECTIONS=16 BOTTLENECK_MBIT=50 GOLD_SHARE=50
#   BE_QUEUE_KB=300 BULK_STREAMS=4 BULK_CC=cubic (the streams' TCP congestion control: a
#   loss-based one fills the queue, as most bulk senders do; BBR would keep it short) IDLE=1 (0: skip the idle-link reference) SKIP_BUILD=1
#   LATHER (default target/release/lather). Needs root, ip, tc, python3 and wrk.
# Results: target/bench-results/qos-dscp-benefit-<timestamp>/ (configs, wrk output, tc
#   statistics, table.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-15}"
CONNECTIONS="${CONNECTIONS:-16}"
BOTTLENECK_MBIT="${BOTTLENECK_MBIT:-50}"
GOLD_SHARE="${GOLD_SHARE:-50}"
BE_QUEUE_KB="${BE_QUEUE_KB:-300}"
BULK_STREAMS="${BULK_STREAMS:-4}"
BULK_CC="${BULK_CC:-cubic}"
IDLE="${IDLE:-1}"
LATHER="${LATHER:-$repo/target/release/lather}"

[ "$(id -u)" = 0 ] || die "needs root (ip netns, veth, tc)"
command -v ip >/dev/null 2>&1 || die "ip (iproute2) not found"
command -v tc >/dev/null 2>&1 || die "tc (iproute2) not found"
command -v wrk >/dev/null 2>&1 || die "wrk not found (apt-get install -y wrk)"
command -v python3 >/dev/null 2>&1 || die "python3 not found (it makes the background traffic)"
command -v taskset >/dev/null 2>&1 || die "taskset not found (util-linux)"

srv_ns="qb-srv-$$"
rtr_ns="qb-rtr-$$"
cli_ns="qb-cli-$$"
srv_if="qbs-$$"
rtr_srv_if="qbr1-$$"
rtr_cli_if="qbr2-$$"
cli_if="qbc-$$"
srv_ip=10.210.1.1
rtr_srv_ip=10.210.1.2
rtr_cli_ip=10.210.2.1
cli_ip=10.210.2.2
marked_port=8081
plain_port=8082
bulk_port=5201

# Stops what start_bg started (by PID), then whatever still runs inside the namespaces made
# here, then deletes them (and with them the veth pairs).
cleanup() {
    local ns pid
    stop_all
    for ns in "$cli_ns" "$rtr_ns" "$srv_ns"; do
        ip netns list 2>/dev/null | grep -qw "^$ns" || continue
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            log "stopping pid $pid left in $ns"
            kill -TERM "$pid" 2>/dev/null || true
        done
        sleep 0.3
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            kill -KILL "$pid" 2>/dev/null || true
        done
        ip netns del "$ns" 2>/dev/null || true
    done
}
trap cleanup EXIT

build_lather
[ -x "$LATHER" ] || die "$LATHER not found (build it, or set LATHER)"
LATHER="$(cd "$(dirname "$LATHER")" && pwd)/$(basename "$LATHER")"
out="$(results_dir qos-dscp-benefit)"
log "results in $out"

in_srv() { ip netns exec "$srv_ns" "$@"; }
in_rtr() { ip netns exec "$rtr_ns" "$@"; }
in_cli() { ip netns exec "$cli_ns" "$@"; }

log "namespaces $srv_ns ($srv_ip), $rtr_ns (router), $cli_ns ($cli_ip)"
ip netns add "$srv_ns"
ip netns add "$rtr_ns"
ip netns add "$cli_ns"
# The veth ends are made in their namespaces: nothing appears in the host's.
ip link add "$srv_if" netns "$srv_ns" type veth peer name "$rtr_srv_if" netns "$rtr_ns"
ip link add "$rtr_cli_if" netns "$rtr_ns" type veth peer name "$cli_if" netns "$cli_ns"
for ns in "$srv_ns" "$rtr_ns" "$cli_ns"; do ip -n "$ns" link set lo up; done
ip -n "$srv_ns" addr add "$srv_ip/24" dev "$srv_if"
ip -n "$rtr_ns" addr add "$rtr_srv_ip/24" dev "$rtr_srv_if"
ip -n "$rtr_ns" addr add "$rtr_cli_ip/24" dev "$rtr_cli_if"
ip -n "$cli_ns" addr add "$cli_ip/24" dev "$cli_if"
ip -n "$srv_ns" link set "$srv_if" up
ip -n "$rtr_ns" link set "$rtr_srv_if" up
ip -n "$rtr_ns" link set "$rtr_cli_if" up
ip -n "$cli_ns" link set "$cli_if" up
ip -n "$srv_ns" route add default via "$rtr_srv_ip"
ip -n "$cli_ns" route add default via "$rtr_cli_ip"
in_rtr sysctl -qw net.ipv4.ip_forward=1
# A real link puts MTU-sized packets on the wire: keep the TCP senders from handing the
# router 64 KB GSO super-packets (no ethtool needed), where the kernel allows it.
for spec in "$srv_ns:$srv_if" "$cli_ns:$cli_if"; do
    ip -n "${spec%%:*}" link set dev "${spec#*:}" gso_max_segs 1 2>/dev/null ||
        log "could not set gso_max_segs on ${spec#*:} (the router may see GSO packets)"
done

# The bottleneck: the router's egress toward the client.
tc_rtr() { in_rtr tc "$@"; }
be_bytes=$((BE_QUEUE_KB * 1024))
gold_rate=$((BOTTLENECK_MBIT * GOLD_SHARE / 100))
be_rate=$((BOTTLENECK_MBIT - gold_rate))
[ "$gold_rate" -ge 1 ] && [ "$be_rate" -ge 1 ] || die "GOLD_SHARE must leave both classes at least 1 Mbit/s"
if tc_rtr qdisc add dev "$rtr_cli_if" root handle 1: htb default 20 2>"$out/tc-htb.err"; then
    shaper=htb
    tc_rtr class add dev "$rtr_cli_if" parent 1: classid 1:1 htb \
        rate "${BOTTLENECK_MBIT}mbit" ceil "${BOTTLENECK_MBIT}mbit" quantum 1514
    tc_rtr class add dev "$rtr_cli_if" parent 1:1 classid 1:10 htb \
        rate "${gold_rate}mbit" ceil "${BOTTLENECK_MBIT}mbit" prio 0 quantum 1514
    tc_rtr class add dev "$rtr_cli_if" parent 1:1 classid 1:20 htb \
        rate "${be_rate}mbit" ceil "${BOTTLENECK_MBIT}mbit" prio 1 quantum 1514
    tc_rtr qdisc add dev "$rtr_cli_if" parent 1:10 handle 10: pfifo limit 100
    tc_rtr qdisc add dev "$rtr_cli_if" parent 1:20 handle 20: bfifo limit "$be_bytes"
    tc_rtr filter add dev "$rtr_cli_if" parent 1: protocol ip prio 1 u32 \
        match ip tos 0x28 0xfc flowid 1:10
    gold_class=1:10
    be_class=1:20
elif tc_rtr qdisc add dev "$rtr_cli_if" root handle 1: tbf rate "${BOTTLENECK_MBIT}mbit" \
    burst 32kbit latency 1s 2>"$out/tc-tbf.err" &&
    tc_rtr qdisc add dev "$rtr_cli_if" parent 1:1 handle 10: prio bands 2 \
        priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 2>"$out/tc-prio.err"; then
    # Strict priority under one shaper: band 1 (DSCP 10) is always sent first.
    shaper="tbf+prio"
    tc_rtr qdisc add dev "$rtr_cli_if" parent 10:1 handle 11: pfifo limit 100
    tc_rtr qdisc add dev "$rtr_cli_if" parent 10:2 handle 12: bfifo limit "$be_bytes"
    tc_rtr filter add dev "$rtr_cli_if" parent 10: protocol ip prio 1 u32 \
        match ip tos 0x28 0xfc flowid 10:1
    gold_class=10:1
    be_class=10:2
else
    for q in htb tbf prio; do
        [ ! -s "$out/tc-$q.err" ] || log "tc qdisc add … $q: $(cat "$out/tc-$q.err")"
    done
    die "this kernel has neither the htb qdisc nor tbf and prio: no way to give DSCP 10 a class of its own at a bottleneck; stopping"
fi
tc_rtr -d qdisc show dev "$rtr_cli_if" >"$out/tc-setup.txt"
tc_rtr -d class show dev "$rtr_cli_if" >>"$out/tc-setup.txt"
tc_rtr filter show dev "$rtr_cli_if" >>"$out/tc-setup.txt" 2>/dev/null || true
log "bottleneck: $shaper, ${BOTTLENECK_MBIT} Mbit/s toward the client; DSCP 10 -> $gold_class (${gold_rate} Mbit/s guaranteed, first served), the rest -> $be_class (${be_rate} Mbit/s, ${BE_QUEUE_KB} KB queue)"

# class_stat CLASSID FIELD : bytes or dropped of a class at the bottleneck, cumulative.
class_stat() {
    tc_rtr -s class show dev "$rtr_cli_if" | awk -v id="$1" -v f="$2" '
        $1 == "class" && $3 == id { on = 1; next }
        on && $1 == "Sent" {
            if (f == "bytes") print $2
            else { for (i = 1; i <= NF; i++) if ($i == "(dropped") { v = $(i + 1); sub(/,/, "", v); print v } }
            exit
        }'
}

# lather: the same echo twice, one marking its answers to this client, one not.
if [ "$(nproc)" -ge 2 ]; then srv_cpus=1 cli_cpus=0; else srv_cpus=0 cli_cpus=0; fi
server() { # NAME PORT EXTRA
    # access_log = false: a log line per request would slow the measured server.
    printf '[server]\naccess_log = false\nlisten = "%s:%s"\nmax_in_flight = 4096\nqueue_capacity = 4096\n%s\n[[service]]\nname = "echo"\npath = "/echo"\nbuiltin = "echo"\n' \
        "$srv_ip" "$2" "$3" >"$out/$1.toml"
    start_bg "$out/$1.log" ip netns exec "$srv_ns" taskset -c "$srv_cpus" \
        "$LATHER" --log-level warn serve --config "$out/$1.toml"
}
# ns_health NS HOST PORT : GET /health from inside NS answers 200.
ns_health() {
    # shellcheck disable=SC2016 # expanded by the inner bash
    [ "$(timeout 2 ip netns exec "$1" bash -c '
        exec 3<>"/dev/tcp/$0/$1" || exit 1
        printf "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" >&3
        head -n1 <&3' "$2" "$3" 2>/dev/null | awk '{print $2}')" = 200 ]
}
server marked "$marked_port" "[qos.class.gold]
dscp = 10
[[qos.client]]
address = \"$cli_ip/32\"
class = \"gold\""
marked_pid=$bg_pid
server plain "$plain_port" ""
plain_pid=$bg_pid
wait_for "lather (marked)" "$marked_pid" "$out/marked.log" 20 ns_health "$cli_ns" "$srv_ip" "$marked_port"
wait_for "lather (plain)" "$plain_pid" "$out/plain.log" 20 ns_health "$cli_ns" "$srv_ip" "$plain_port"
# `ip netns exec` and taskset exec in place: the PID is lather's own.
grep -q lather "/proc/$marked_pid/cmdline" || die "pid $marked_pid is not lather"

# The background: BULK_STREAMS TCP streams from the server's namespace to a sink in the
# client's, each sending as fast as TCP lets it, so the offered load exceeds the bottleneck.
cat >"$out/bulk.py" <<'PY'
import socket, sys, threading
if sys.argv[1] == "sink":
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((sys.argv[2], int(sys.argv[3])))
    ls.listen(64)
    def drain(c):
        buf = bytearray(1 << 20)
        while c.recv_into(buf):
            pass
    while True:
        c, _ = ls.accept()
        threading.Thread(target=drain, args=(c,), daemon=True).start()
else:
    host, port, n, cc = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    data = b"\0" * (1 << 20)
    def pump():
        s = socket.socket()
        try:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        except OSError as e:
            print("cannot use congestion control %s: %s" % (cc, e), file=sys.stderr, flush=True)
        s.connect((host, port))
        print("stream with congestion control",
              s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode(), flush=True)
        while True:
            s.sendall(data)
    threads = [threading.Thread(target=pump) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
PY
start_bg "$out/bulk-sink.log" ip netns exec "$cli_ns" python3 "$out/bulk.py" sink "$cli_ip" "$bulk_port"
sink_pid=$bg_pid
# sink_open : the sink accepts connections from the server's namespace.
sink_open() {
    # shellcheck disable=SC2016 # expanded by the inner bash
    timeout 1 ip netns exec "$srv_ns" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$cli_ip" "$bulk_port" 2>/dev/null
}
wait_for "bulk sink" "$sink_pid" "$out/bulk-sink.log" 10 sink_open
bulk_pid=""
start_bulk() {
    start_bg "$out/bulk-source.log" ip netns exec "$srv_ns" python3 "$out/bulk.py" source \
        "$cli_ip" "$bulk_port" "$BULK_STREAMS" "$BULK_CC"
    bulk_pid=$bg_pid
    sleep 3 # let the streams fill the queue
    kill -0 "$bulk_pid" 2>/dev/null || { cat "$out/bulk-source.log" >&2; die "the bulk source exited"; }
    sort "$out/bulk-source.log" | uniq -c | while read -r line; do log "  bulk: $line"; done
}
stop_bulk() {
    kill -TERM "$bulk_pid" 2>/dev/null || true
    wait "$bulk_pid" 2>/dev/null || true
    bulk_pid=""
    sleep 2 # let the queue drain
}

payload='<ns:echo xmlns:ns="urn:lather:echo"><text>xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx</text></ns:echo>'
printf '<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>%s</soap:Body></soap:Envelope>' \
    "$payload" >"$out/body.xml"
cat >"$out/echo.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "text/xml; charset=utf-8"
wrk.headers["SOAPAction"] = '"urn:lather:echo#echo"'
local f = io.open("$out/body.xml", "rb"); wrk.body = f:read("*a"); f:close()
LUA

hz=$(getconf CLK_TCK)
# to_ms VALUE-WITH-UNIT : wrk's latency (us, ms, s) in milliseconds.
to_ms() {
    awk -v v="$1" 'BEGIN {
        n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
        if (u == "us") n /= 1000; else if (u == "s") n *= 1000; else if (u == "m") n *= 60000
        printf "%.2f", n }'
}
declare -A rps p50 p99 cpu gold_mb bg_mbit drops
# measure NAME PORT PID ROUND : one wrk run from the client namespace; fills the arrays.
measure() {
    local name=$1 port=$2 pid=$3 round=$4 f before after reqs g0 g1 b0 b1 d0 d1 bad
    f="$out/wrk-$name-$round.txt"
    g0=$(class_stat "$gold_class" bytes) b0=$(class_stat "$be_class" bytes) d0=$(class_stat "$be_class" dropped)
    before=$(cpu_ticks "$pid")
    in_cli taskset -c "$cli_cpus" wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency \
        -s "$out/echo.lua" "http://$srv_ip:$port/echo" >"$f"
    after=$(cpu_ticks "$pid")
    g1=$(class_stat "$gold_class" bytes) b1=$(class_stat "$be_class" bytes) d1=$(class_stat "$be_class" dropped)
    bad=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$f")
    [ -z "$bad" ] || die "wrk: $bad answers were not 2xx ($name, round $round)"
    reqs=$(awk '/requests in/ {print $1}' "$f")
    [ "${reqs:-0}" -gt 0 ] || { cat "$f" >&2; die "wrk completed no request ($name, round $round)"; }
    rps[$name,$round]=$(awk '/Requests\/sec/ {print $2}' "$f")
    p50[$name,$round]=$(to_ms "$(awk '$1 == "50%" {print $2}' "$f")")
    p99[$name,$round]=$(to_ms "$(awk '$1 == "99%" {print $2}' "$f")")
    cpu[$name,$round]=$(awk -v t=$((after - before)) -v hz="$hz" -v q="$reqs" 'BEGIN {printf "%.1f", t / hz * 1e6 / q}')
    gold_mb[$name,$round]=$(awk -v a="$g0" -v b="$g1" 'BEGIN {printf "%.2f", (b - a) / 1e6}')
    bg_mbit[$name,$round]=$(awk -v a="$b0" -v b="$b1" -v d="$DURATION" 'BEGIN {printf "%.1f", (b - a) * 8 / d / 1e6}')
    drops[$name,$round]=$((d1 - d0))
    log "  $name: ${rps[$name,$round]} req/s, p50 ${p50[$name,$round]} ms, p99 ${p99[$name,$round]} ms, ${cpu[$name,$round]} µs CPU/request, priority class ${gold_mb[$name,$round]} MB, best effort ${bg_mbit[$name,$round]} Mbit/s, ${drops[$name,$round]} drops"
}

# Check the path before measuring: the marked server's answers must land in the priority
# class, the plain server's must not.
log "probe runs (idle link, 2 s each)"
for c in "marked:$marked_port" "plain:$plain_port"; do
    g0=$(class_stat "$gold_class" bytes)
    in_cli wrk -t1 -c2 -d2s -s "$out/echo.lua" "http://$srv_ip:${c#*:}/echo" >"$out/probe-${c%%:*}.txt"
    g1=$(class_stat "$gold_class" bytes)
    grep -q 'Non-2xx' "$out/probe-${c%%:*}.txt" && die "probe ${c%%:*}: answers not 2xx (see $out/probe-${c%%:*}.txt)"
    log "  ${c%%:*}: $(awk '/requests in/ {print $1}' "$out/probe-${c%%:*}.txt") requests, $((g1 - g0)) bytes in the priority class"
    if [ "${c%%:*}" = marked ]; then
        [ $((g1 - g0)) -gt 10000 ] || die "the marked server's answers did not reach the priority class: is the [[qos.client]] rule matching $cli_ip?"
    else
        [ $((g1 - g0)) -lt 10000 ] || die "the plain server's answers went to the priority class"
    fi
done

cases="marked:$marked_port:$marked_pid plain:$plain_port:$plain_pid"
log "background: $BULK_STREAMS bulk TCP streams $srv_ns -> $cli_ns"
start_bulk
for round in $(seq 1 "$ROUNDS"); do
    log "round $round of $ROUNDS, with the background"
    # Alternate which goes first.
    order=$cases
    [ $((round % 2)) -eq 0 ] && order="plain:$plain_port:$plain_pid marked:$marked_port:$marked_pid"
    for c in $order; do
        IFS=: read -r name port pid <<<"$c"
        measure "$name" "$port" "$pid" "$round"
    done
done
stop_bulk
names="marked plain"
if [ "$IDLE" = 1 ]; then
    for round in $(seq 1 "$ROUNDS"); do
        log "round $round of $ROUNDS, idle link"
        for c in $cases; do
            IFS=: read -r name port pid <<<"$c"
            measure "$name-idle" "$port" "$pid" "$round"
        done
    done
    names="$names marked-idle plain-idle"
fi
tc_rtr -s qdisc show dev "$rtr_cli_if" >"$out/tc-end.txt"
tc_rtr -s class show dev "$rtr_cli_if" >>"$out/tc-end.txt"

{
    echo "lather echo in one namespace (CPU $srv_cpus), wrk -t1 -c$CONNECTIONS -d${DURATION}s in another (CPU $cli_cpus), through a router namespace whose egress toward the client is a ${BOTTLENECK_MBIT} Mbit/s $shaper bottleneck: DSCP 10 first-served with ${gold_rate} Mbit/s guaranteed, best effort a ${BE_QUEUE_KB} KB queue; background $BULK_STREAMS bulk TCP streams ($BULK_CC) server -> client; $ROUNDS rounds alternating, medians; $(nproc) CPUs"
    echo
    echo "| lather answers | background | requests/s | latency p50 ms | latency p99 ms | server CPU µs/request | MB in the DSCP 10 class | best-effort Mbit/s | best-effort drops |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
    for name in $names; do
        label=${name%-idle}
        bg="$BULK_STREAMS bulk streams"
        [ "$name" = "$label" ] || bg="none (idle link)"
        if [ "$label" = marked ]; then label="marked (DSCP 10)"; else label="not marked"; fi
        printf '| %s | %s | %.0f | %s | %s | %s | %s | %s | %s |\n' "$label" "$bg" \
            "$(median_over rps "$name")" "$(median_over p50 "$name")" "$(median_over p99 "$name")" \
            "$(median_over cpu "$name")" "$(median_over gold_mb "$name")" \
            "$(median_over bg_mbit "$name")" "$(median_over drops "$name")"
    done
    echo
    echo "per round:"
    echo
    echo "| run | round | requests/s | p50 ms | p99 ms | CPU µs/request | MB DSCP 10 class | best-effort Mbit/s | drops |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    for name in $names; do
        for round in $(seq 1 "$ROUNDS"); do
            echo "| $name | $round | ${rps[$name,$round]} | ${p50[$name,$round]} | ${p99[$name,$round]} | ${cpu[$name,$round]} | ${gold_mb[$name,$round]} | ${bg_mbit[$name,$round]} | ${drops[$name,$round]} |"
        done
    done
} >"$out/table.md"
cat "$out/table.md"
log "results in $out"
