#!/usr/bin/env bash
# The paper's Figure 7 (seed 002): the context store's access cost — SetContext and
# GetContext of a 1.58 KB message (a WS-RM-style header as the context, as in the paper)
# against a dummy echo of the same size, and an empty-message echo; p50/p99 of the round
# trip, one request at a time, on loopback and behind a delay proxy.
#
#   lather-bench http URL --connections 1 --requests N --body BODY --soap 1.2
#
# SetContext runs create a new (minted) context per request; GetContext reads one context
# made before the run (readable by anyone). The store is in memory, or in a redb file with
# STORE_FILE=1 (each write is then a committed transaction).
#
# Results: target/bench-results/context-store-<timestamp>/ (bodies, reports, table.md).
#
# Environment:
#   REQUESTS=2000      requests per run on loopback
#   DELAYS_US="0 5000" one-way delays of the proxy in front of the server (0: no proxy)
#   REQUESTS_DELAYED=200  requests per run behind a delay
#   STORE_FILE=0       1: the store in a redb file
#   SKIP_BUILD=1       do not build lather and lather-bench first
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

REQUESTS="${REQUESTS:-2000}"
REQUESTS_DELAYED="${REQUESTS_DELAYED:-200}"
DELAYS_US="${DELAYS_US:-0 5000}"
STORE_FILE="${STORE_FILE:-0}"
LATHER="${LATHER:-$repo/target/release/lather}"
LATHER_BENCH="${LATHER_BENCH:-$repo/target/release/lather-bench}"
bench_pids=()

build_lather
out="$(results_dir context-store)"
log "results in $out"

port="$(free_port)"
{
    # access_log = false: a log line per request would slow the measured server.
    printf '[server]\naccess_log = false\nlisten = "127.0.0.1:%s"\n\n' "$port"
    printf '[[service]]\nname = "echo"\npath = "/echo"\nbuiltin = "echo"\n\n'
    printf '[[service]]\nname = "ctx"\npath = "/ctx"\nbuiltin = "context-store"\nmax_contexts = 1000000\n'
    [ "$STORE_FILE" = 1 ] && printf 'store = "%s/contexts.redb"\n' "$out"
} >"$out/server.toml"
start_bg "$out/server.log" "$LATHER" serve --config "$out/server.toml"
wait_for lather "$bg_pid" "$out/server.log" 20 health_ok "$port"

# The context: a WS-ReliableMessaging Sequence and AckRequested with WS-Addressing headers,
# 1.58 KB as in the paper (its printed size is checked below).
context='<wsrm:Sequence xmlns:wsrm="http://docs.oasis-open.org/ws-rx/wsrm/200702"><wsrm:Identifier>http://Business456.com/RM/ABC</wsrm:Identifier><wsrm:MessageNumber>1</wsrm:MessageNumber></wsrm:Sequence><wsrm:AckRequested xmlns:wsrm="http://docs.oasis-open.org/ws-rx/wsrm/200702"><wsrm:Identifier>http://Business456.com/RM/ABC</wsrm:Identifier></wsrm:AckRequested><wsa:ReplyTo xmlns:wsa="http://www.w3.org/2005/08/addressing"><wsa:Address>http://Business456.com/serviceA/789</wsa:Address><wsa:ReferenceParameters><b:Conversation xmlns:b="http://Business456.com/ns">urn:uuid:0f8b7e2a-93c4-4d5e-a1b2-c3d4e5f60718</b:Conversation></wsa:ReferenceParameters></wsa:ReplyTo><wsa:From xmlns:wsa="http://www.w3.org/2005/08/addressing"><wsa:Address>http://Business456.com/serviceA/789</wsa:Address></wsa:From><wsa:To xmlns:wsa="http://www.w3.org/2005/08/addressing">http://example.com/serviceB/123</wsa:To><wsa:Action xmlns:wsa="http://www.w3.org/2005/08/addressing">http://example.com/serviceB/123/request</wsa:Action><wsa:FaultTo xmlns:wsa="http://www.w3.org/2005/08/addressing"><wsa:Address>http://Business456.com/serviceA/faults</wsa:Address><wsa:ReferenceParameters><b:Conversation xmlns:b="http://Business456.com/ns">urn:uuid:0f8b7e2a-93c4-4d5e-a1b2-c3d4e5f60718</b:Conversation><b:Tenant xmlns:b="http://Business456.com/ns">business-456-eu-west-production-tenant-0042</b:Tenant><b:Route xmlns:b="http://Business456.com/ns">gateway-eu-west-1/rm-relay-7/business456/gateway-eu-west-1/rm-relay-7/business456/gateway-eu-west-1/rm-relay-7/busines</b:Route></wsa:ReferenceParameters></wsa:FaultTo>'
env() { # BODY
    printf '<?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body>%s</s:Body></s:Envelope>' "$1"
}
env "<lc:SetContext xmlns:lc=\"urn:lather:context\"><lc:Readers>anyone</lc:Readers><lc:Contents>$context</lc:Contents></lc:SetContext>" >"$out/set.xml"
# The dummy echo is as large as the SetContext message: its text pads it to that size.
set_bytes=$(wc -c <"$out/set.xml")
bare=$(env '<m:echo xmlns:m="urn:lather:echo"><text></text></m:echo>' | wc -c)
env "<m:echo xmlns:m=\"urn:lather:echo\"><text>$(head -c $((set_bytes - bare)) /dev/zero | tr '\0' 'x')</text></m:echo>" >"$out/echo.xml"
env '<m:echo xmlns:m="urn:lather:echo"/>' >"$out/empty.xml"
log "context $(printf '%s' "$context" | wc -c) bytes"
log "message sizes: set $(wc -c <"$out/set.xml"), echo $(wc -c <"$out/echo.xml"), empty $(wc -c <"$out/empty.xml") bytes"

# One context to read.
"$LATHER_BENCH" http "http://127.0.0.1:$port/ctx" --connections 1 --requests 1 --duration 30 \
    --body "$out/set.xml" --soap 1.2 --json "$out/made.json" >/dev/null 2>&1
uri="$(timeout 5 bash -c '
    exec 3<>"/dev/tcp/127.0.0.1/$0"
    body="$(cat "$1")"
    printf "POST /ctx HTTP/1.1\r\nHost: x\r\nContent-Type: application/soap+xml\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s" "${#body}" "$body" >&3
    cat <&3' "$port" "$out/set.xml" | sed -n 's/.*<wsctx:context-identifier>\([^<]*\)<.*/\1/p')"
[ -n "$uri" ] || die "could not make the context to read"
env "<lc:GetContext xmlns:lc=\"urn:lather:context\"><lc:Uri>$uri</lc:Uri></lc:GetContext>" >"$out/get.xml"

echo "| where | operation | request bytes | answer bytes (HTTP included) | p50 µs | p99 µs | mean µs | requests |" >"$out/table.md"
echo "|---|---|---:|---:|---:|---:|---:|---:|" >>"$out/table.md"
for delay in $DELAYS_US; do
    target_port=$port
    requests=$REQUESTS
    where=loopback
    if [ "$delay" != 0 ]; then
        target_port="$(free_port)"
        start_bg "$out/proxy-$delay.log" "$LATHER_BENCH" delay-proxy --listen "127.0.0.1:$target_port" \
            --to "127.0.0.1:$port" --delay-us "$delay"
        sleep 0.3
        requests=$REQUESTS_DELAYED
        where="${delay} µs each way"
    fi
    for op in set get echo empty; do
        path=/ctx
        case $op in echo | empty) path=/echo ;; esac
        log "$where: $op, $requests requests"
        "$LATHER_BENCH" http "http://127.0.0.1:$target_port$path" --connections 1 --requests "$requests" \
            --duration 3600 --warmup 1 --body "$out/$op.xml" --soap 1.2 --json "$out/$op-$delay.json" \
            >"$out/$op-$delay.txt" 2>&1
        answer=$(awk -v r="$(json_num "$out/$op-$delay.json" bytes_received)" -v n="$(json_num "$out/$op-$delay.json" requests_ok)" 'BEGIN {printf "%.0f", r / n}')
        echo "| $where | $op | $(wc -c <"$out/$op.xml") | $answer | $(json_num "$out/$op-$delay.json" p50) | $(json_num "$out/$op-$delay.json" p99) | $(sed -n 's/^ *"mean": \([0-9.]*\),*$/\1/p' "$out/$op-$delay.json" | head -n1) | $(json_num "$out/$op-$delay.json" requests_ok) |" >>"$out/table.md"
    done
done
cat "$out/table.md"
