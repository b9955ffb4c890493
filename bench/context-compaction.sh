#!/usr/bin/env bash
# The paper's Figure 5 (seed 002): an echo service called with a full WS-Addressing header
# (bench/context/wsa-echo.xml, 100-byte body), plain SOAP vs compacted by the
# context-compact / context-expand pair, over a slow link: bytes per message and round
# trip time — and on a negotiated message stream between the two gateways.
#
#   client ──► near lather ──(link)──► far lather ──► lather echo
#              (context-compact)       (context-expand)
#              (stream = "tcp")  ══════ (accept_streams; the stream crosses the same link)
#
# The link is lather-bench delay-proxy with --rate-kbps (each direction), or none
# (loopback). The context store runs beside the echo service and the gateways reach it
# directly (off the measured link); the first compacted message, which makes the context,
# is a warm-up and not measured.
#
# For each link and mode: `lather-bench http URL --connections 1 --requests N --body
# FIXTURE --soap 1.2` (one request at a time), its mean and p50 round trip, and the
# envelope bytes the far side received per request (its lather_request_bytes_total over
# lather_requests_total): what crossed the link, HTTP head aside; on a stream, the bytes its
# stream connection read per request (lather_stream_bytes_total, frames included). Each
# request has its own wsa:MessageID (lather-bench --vary). A stream's schema goes once, on
# the warm-up, which also waits for the stream to open.
#
# Results: target/bench-results/context-compaction-<timestamp>/ (configs, logs, reports,
# table.md).
#
# Environment:
#   LINKS="loopback 1000 14.4"   links: loopback, or a rate in kbit/s
#   REQUESTS_FAST=200            requests per run on loopback and links ≥ 100 kbit/s
#   REQUESTS_SLOW=10             requests per run on slower links
#   DELAY_US=0                   the links' one-way propagation delay, microseconds
#   FIXTURE=bench/context/wsa-echo.xml
#   SKIP_BUILD=1                 do not build lather and lather-bench first
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

LINKS="${LINKS:-loopback 1000 14.4}"
REQUESTS_FAST="${REQUESTS_FAST:-200}"
REQUESTS_SLOW="${REQUESTS_SLOW:-10}"
DELAY_US="${DELAY_US:-0}"
FIXTURE="${FIXTURE:-$repo/bench/context/wsa-echo.xml}"
VARY="${VARY:-6b29fc40-ca47-1067-b31d-00dd010662da}"
MODES="${MODES:-plain compact stream}"
LATHER="${LATHER:-$repo/target/release/lather}"
LATHER_BENCH="${LATHER_BENCH:-$repo/target/release/lather-bench}"
bench_pids=()

[ -f "$FIXTURE" ] || die "fixture $FIXTURE not found"
build_lather
[ -x "$LATHER" ] || die "$LATHER not found"
out="$(results_dir context-compaction)"
log "results in $out"

# The far side: echo, the store, and the expanding gateway.
echo_port="$(free_port)"
cat >"$out/echo.toml" <<EOF
[server]
# Off while measuring throughput: a log line per request costs more than an echo.
access_log = false
listen = "127.0.0.1:$echo_port"

[[service]]
name = "echo"
path = "/echo"
builtin = "echo"

[[service]]
name = "ctx"
path = "/ctx"
builtin = "context-store"
EOF
start_bg "$out/echo.log" "$LATHER" serve --config "$out/echo.toml"
wait_for echo "$bg_pid" "$out/echo.log" 20 health_ok "$echo_port"
store="http://127.0.0.1:$echo_port/ctx"

far_port="$(free_port)"
cat >"$out/far.toml" <<EOF
[server]
# Off while measuring throughput: a log line per request costs more than an echo.
access_log = false
listen = "127.0.0.1:$far_port"

[handlers.expand]
kind = "context-expand"
store = "$store"

[[service]]
name = "plain"
path = "/plain"
upstream = ["http://127.0.0.1:$echo_port/echo"]

[[service]]
name = "compact"
path = "/compact"
upstream = ["http://127.0.0.1:$echo_port/echo"]
request = [["expand"]]
EOF
start_bg "$out/far.log" "$LATHER" serve --config "$out/far.toml"
far_pid=$bg_pid
wait_for far "$far_pid" "$out/far.log" 20 health_ok "$far_port"

# One link per entry: a proxy (or none) and the near gateway's two services across it.
near_port="$(free_port)"
{
    # access_log = false: a log line per request would slow the measured server.
    printf '[server]\naccess_log = false\nlisten = "127.0.0.1:%s"\n\n' "$near_port"
    printf '[handlers.compact]\nkind = "context-compact"\nstore = "%s"\n\n' "$store"
} >"$out/near.toml"
for link in $LINKS; do
    name="${link//./_}"
    link_to() { # TARGET-PORT : sets reach, the address reaching 127.0.0.1:TARGET-PORT across this link
        if [ "$link" = loopback ]; then
            reach="127.0.0.1:$1"
        else
            local p
            p="$(free_port)"
            start_bg "$out/proxy-$name-$1.log" "$LATHER_BENCH" delay-proxy --listen "127.0.0.1:$p" \
                --to "127.0.0.1:$1" --delay-us "$DELAY_US" --rate-kbps "$link" --coarse
            reach="127.0.0.1:$p"
        fi
    }
    link_to "$far_port"
    across=$reach
    # The stream's far side: its own lather per link, whose stream port is reached across
    # the link too (public_port: the proxy's).
    fs_port="$(free_port)" fs_stream="$(free_port)"
    link_to "$fs_port"
    fs_across=$reach
    link_to "$fs_stream"
    fs_stream_across=$reach
    # access_log = false: a log line per request would slow the measured server.
    printf '[server]\naccess_log = false\nlisten = "127.0.0.1:%s"\n\n[stream]\nlisten = "127.0.0.1:%s"\npublic_port = %s\n\n[[service]]\nname = "stream"\npath = "/stream"\nupstream = ["http://127.0.0.1:%s/echo"]\naccept_streams = true\n' \
        "$fs_port" "$fs_stream" "${fs_stream_across##*:}" "$echo_port" >"$out/far-stream-$name.toml"
    start_bg "$out/far-stream-$name.log" "$LATHER" serve --config "$out/far-stream-$name.toml"
    wait_for far-stream "$bg_pid" "$out/far-stream-$name.log" 20 health_ok "$fs_port"
    printf -v "fs_port_$name" '%s' "$fs_port"
    printf '[[service]]\nname = "stream-%s"\npath = "/%s/stream"\nupstream = ["http://%s/stream"]\ntimeout_ms = 120000\nstream = "tcp"\n\n' \
        "$name" "$name" "$fs_across" >>"$out/near.toml"
    for mode in plain compact; do
        printf '[[service]]\nname = "%s-%s"\npath = "/%s/%s"\nupstream = ["http://%s/%s"]\ntimeout_ms = 120000\n' \
            "$mode" "$name" "$name" "$mode" "$across" "$mode" >>"$out/near.toml"
        [ "$mode" = compact ] && printf 'request = [["compact"]]\n' >>"$out/near.toml"
        printf '\n' >>"$out/near.toml"
    done
done
start_bg "$out/near.log" "$LATHER" serve --config "$out/near.toml"
wait_for near "$bg_pid" "$out/near.log" 20 health_ok "$near_port"

metric() { # PORT NAME SERVICE
    http_metrics "$1" | sed -n "s/^$2{service=\"$3\"[^}]*} \\([0-9.e+]*\\)\$/\\1/p" | awk '{s += $1} END {print s + 0}'
}
http_metrics() {
    # shellcheck disable=SC2016 # expanded by the inner bash
    timeout 5 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$0" || exit 1
        printf "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n" "$0" >&3
        cat <&3' "$1"
}
echo "| link | mode | envelope bytes received | round trip mean ms | p50 ms | requests |" >"$out/table.md"
echo "|---|---|---:|---:|---:|---:|" >>"$out/table.md"
plain_metric() { # PORT LINE-PREFIX : the value of the first line starting with the prefix
    http_metrics "$1" | awk -v p="$2" 'index($0, p) == 1 {v = $NF} END {print v + 0}'
}
# far_bytes MODE : what the far side received so far for MODE: envelope bytes (stream:
# stream connection bytes), then requests.
far_bytes() {
    if [ "$1" = stream ]; then
        local port_var="fs_port_$name"
        plain_metric "${!port_var}" 'lather_stream_bytes_total{direction="in"}'
        metric "${!port_var}" lather_requests_total stream
    else
        metric "$far_port" lather_request_bytes_total "$1"
        metric "$far_port" lather_requests_total "$1"
    fi
}
for link in $LINKS; do
    name="${link//./_}"
    requests=$REQUESTS_FAST
    if [ "$link" != loopback ] && awk "BEGIN {exit !($link < 100)}"; then
        requests=$REQUESTS_SLOW
    fi
    for mode in $MODES; do
        url="http://127.0.0.1:$near_port/$name/$mode"
        log "$link $mode: warm-up"
        for attempt in $(seq 1 30); do
            "$LATHER_BENCH" http "$url" --connections 1 --requests 2 --duration 600 --body "$FIXTURE" \
                --soap 1.2 --vary "$VARY" --expect "urn:lather:echo" --quiet >/dev/null
            [ "$mode" != stream ] && break
            opened=$(plain_metric "$near_port" "lather_stream_negotiations_total{service=\"stream-$name\",outcome=\"opened\"}")
            [ "$opened" = 1 ] && break
            [ "$attempt" = 30 ] && die "the stream across $link did not open"
        done
        read -r svc_bytes0 svc_reqs0 < <(far_bytes "$mode" | paste -sd' ')
        log "$link $mode: $requests requests"
        "$LATHER_BENCH" http "$url" --connections 1 --requests "$requests" --duration 3600 \
            --body "$FIXTURE" --soap 1.2 --vary "$VARY" --expect "urn:lather:echo" --json "$out/$name-$mode.json" \
            >"$out/$name-$mode.txt" 2>&1
        sleep 0.5
        read -r svc_bytes1 svc_reqs1 < <(far_bytes "$mode" | paste -sd' ')
        envelope=$(awk -v a="$svc_bytes0" -v b="$svc_bytes1" -v r0="$svc_reqs0" -v r1="$svc_reqs1" \
            'BEGIN {printf "%.0f", (b - a) / (r1 - r0)}')
        mean_ms=$(awk -v us="$(sed -n 's/^ *"mean": \([0-9.]*\),*$/\1/p' "$out/$name-$mode.json" | head -n1)" 'BEGIN {printf "%.2f", us / 1000}')
        p50_ms=$(awk -v us="$(json_num "$out/$name-$mode.json" p50)" 'BEGIN {printf "%.2f", us / 1000}')
        ok="$(json_num "$out/$name-$mode.json" requests_ok)"
        echo "| $link | $mode | $envelope | $mean_ms | $p50_ms | $ok |" >>"$out/table.md"
    done
done
cat "$out/table.md"
