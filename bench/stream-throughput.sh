#!/usr/bin/env bash
# Negotiated message streams (seed 002): N same-shaped messages — bench/context/wsa-echo.xml,
# 1 959 bytes, each with its own wsa:MessageID (--vary) — through two lather gateways on
# loopback, the hop between them SOAP/HTTP or a negotiated stream; and through one gateway
# alone, whose CPU is what two gateways spend outside the hop (the client-facing HTTP server
# and the backend HTTP client). So the hop's CPU per message is (near + far) − single.
#
#   single:  client ─► single ─────────────────► echo
#   plain:   client ─► near-plain ─► far-plain ─► echo      (SOAP/HTTP hop)
#   stream:  client ─► near-stream ═► far-stream ─► echo    (stream hop)
#
# Each run: lather-bench http --connections C --requests N; messages/s; CPU of the gateway
# processes over the run (utime + stime from /proc/PID/stat); the hop's bytes per message each
# way (plain: the far side's lather_request_bytes_total / lather_response_bytes_total —
# envelopes without HTTP heads; stream: its lather_stream_bytes_total — frames included).
# ROUNDS rounds with the three configurations interleaved; the table gives each round and the
# medians. With WRK_SECONDS > 0 (default 5), each round also drives each configuration with
# wrk (Debian's, -t1 -cCONNECTIONS, a Lua script giving every request a random MessageID) for
# that long: a second generator, not lather's own.
#
# Environment: REQUESTS=10000 CONNECTIONS=16 ROUNDS=3 SKIP_BUILD=1
#   FIXTURE=bench/context/wsa-echo.xml VARY=6b29fc40-ca47-1067-b31d-00dd010662da (the MessageID)
# Results: target/bench-results/stream-throughput-<timestamp>/ (configs, logs, reports, table.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

REQUESTS="${REQUESTS:-10000}"
CONNECTIONS="${CONNECTIONS:-16}"
ROUNDS="${ROUNDS:-3}"
WRK_SECONDS="${WRK_SECONDS:-5}"
FIXTURE="${FIXTURE:-$repo/bench/context/wsa-echo.xml}"
VARY="${VARY:-6b29fc40-ca47-1067-b31d-00dd010662da}"
LATHER="${LATHER:-$repo/target/release/lather}"
LATHER_BENCH="${LATHER_BENCH:-$repo/target/release/lather-bench}"
bench_pids=()

build_lather
out="$(results_dir stream-throughput)"
log "results in $out"

serve() { # NAME TOML-BODY : starts a lather with TOML-BODY on a free port; sets port and pid
    local name=$1 body=$2
    port="$(free_port)"
    # access_log = false: a log line per request would slow the measured server.
    printf '[server]\naccess_log = false\nlisten = "127.0.0.1:%s"\n%s\n' "$port" "$body" >"$out/$name.toml"
    start_bg "$out/$name.log" "$LATHER" serve --config "$out/$name.toml"
    pid=$bg_pid
    wait_for "$name" "$pid" "$out/$name.log" 20 health_ok "$port"
}
gateway() { # NAME PATH UPSTREAM EXTRA
    printf '[[service]]\nname = "%s"\npath = "%s"\nupstream = ["%s"]\n%s\n' "$1" "$2" "$3" "$4"
}

serve echo "$(printf '[[service]]\nname = "echo"\npath = "/echo"\nbuiltin = "echo"\n')"
echo_url="http://127.0.0.1:$port/echo"
serve single "$(gateway single /svc "$echo_url" "")"
single_port=$port single_pid=$pid
serve far-plain "$(gateway far /svc "$echo_url" "")"
far_plain_port=$port far_plain_pid=$pid
serve near-plain "$(gateway near /svc "http://127.0.0.1:$far_plain_port/svc" "")"
near_plain_port=$port near_plain_pid=$pid
serve far-stream "$(printf '[stream]\n'; gateway far /svc "$echo_url" "accept_streams = true")"
far_stream_port=$port far_stream_pid=$pid
serve near-stream "$(gateway near /svc "http://127.0.0.1:$far_stream_port/svc" 'stream = "tcp"')"
near_stream_port=$port near_stream_pid=$pid

metrics() { # PORT
    # shellcheck disable=SC2016 # expanded by the inner bash
    timeout 5 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$0" || exit 1
        printf "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n" "$0" >&3
        cat <&3' "$1"
}
sample() { # PORT METRIC-LINE-PREFIX : the value (0 when absent)
    metrics "$1" | awk -v p="$2" 'index($0, p) == 1 {v = $NF} END {print v + 0}'
}
ticks() { # PID... : utime + stime of the processes
    local t=0 pid
    for pid in "$@"; do
        t=$((t + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
    done
    echo "$t"
}
hz=$(getconf CLK_TCK)

# wrk's request: the fixture, its MessageID's UUID replaced by random hex in each request.
wrk_lua="$out/post.lua"
cat >"$wrk_lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = 'application/soap+xml; charset=utf-8; action="urn:lather:echo#echo"'
local f = io.open("$FIXTURE", "rb"); local template = f:read("*a"); f:close()
local at = string.find(template, "$VARY", 1, true)
local head, tail = string.sub(template, 1, at - 1), string.sub(template, at + #"$VARY")
local hex = "0123456789abcdef"
request = function()
    local id = {}
    for i = 1, #"$VARY" do
        local k = math.random(16)
        id[i] = string.sub(hex, k, k)
    end
    return wrk.format(nil, nil, nil, head .. table.concat(id) .. tail)
end
LUA
if [ "$WRK_SECONDS" -gt 0 ]; then
    command -v wrk >/dev/null 2>&1 || die "wrk not found (apt-get install -y wrk), or set WRK_SECONDS=0"
fi

# Warm-up: opens the stream (negotiated in the background on the first message).
for p in $single_port $near_plain_port $near_stream_port; do
    "$LATHER_BENCH" http "http://127.0.0.1:$p/svc" --connections 2 --requests 200 --duration 60 \
        --body "$FIXTURE" --soap 1.2 --vary "$VARY" --expect "urn:lather:echo" --quiet >/dev/null
done
opened=$(metric_value "$near_stream_port" 'lather_stream_negotiations_total{service="near",outcome="opened"}')
[ "$opened" = 1 ] || die "the stream did not open (negotiations opened: $opened); see $out/near-stream.log"

echo "| round | hop | messages/s | gateway CPU µs/message | hop CPU µs/message | hop bytes/message → | hop bytes/message ← | on stream |" >"$out/table.md"
echo "|---:|---|---:|---:|---:|---:|---:|---:|" >>"$out/table.md"
declare -A rate cpu
for round in $(seq 1 "$ROUNDS"); do
    for mode in single plain stream; do
        case $mode in
            single) url="http://127.0.0.1:$single_port/svc"; pids="$single_pid" ;;
            plain) url="http://127.0.0.1:$near_plain_port/svc"; pids="$near_plain_pid $far_plain_pid" ;;
            stream) url="http://127.0.0.1:$near_stream_port/svc"; pids="$near_stream_pid $far_stream_pid" ;;
        esac
        case $mode in
            plain) bytes_in0=$(metric_value "$far_plain_port" 'lather_request_bytes_total{service="far"}')
                bytes_out0=$(metric_value "$far_plain_port" 'lather_response_bytes_total{service="far"}') ;;
            stream) bytes_in0=$(metric_value "$far_stream_port" 'lather_stream_bytes_total{direction="in"}')
                bytes_out0=$(metric_value "$far_stream_port" 'lather_stream_bytes_total{direction="out"}')
                streamed0=$(metric_value "$near_stream_port" 'lather_stream_messages_total{service="near",way="stream"}') ;;
        esac
        # shellcheck disable=SC2086 # a list of PIDs
        t0=$(ticks $pids)
        log "round $round: $mode"
        "$LATHER_BENCH" http "$url" --connections "$CONNECTIONS" --requests "$REQUESTS" --duration 600 \
            --warmup 0 --body "$FIXTURE" --soap 1.2 --vary "$VARY" --expect "urn:lather:echo" \
            --quiet --json "$out/$mode-$round.json" >"$out/$mode-$round.txt" 2>&1
        # shellcheck disable=SC2086
        t1=$(ticks $pids)
        ok=$(json_num "$out/$mode-$round.json" requests_ok)
        rps=$(json_num "$out/$mode-$round.json" rps)
        us=$(awk -v t="$((t1 - t0))" -v hz="$hz" -v n="$ok" 'BEGIN {printf "%.1f", t / hz * 1e6 / n}')
        rate[$mode,$round]=$rps
        cpu[$mode,$round]=$us
        fwd="" back="" hop="" streamed=""
        case $mode in
            plain) fwd=$(metric_value "$far_plain_port" 'lather_request_bytes_total{service="far"}')
                back=$(metric_value "$far_plain_port" 'lather_response_bytes_total{service="far"}') ;;
            stream) fwd=$(metric_value "$far_stream_port" 'lather_stream_bytes_total{direction="in"}')
                back=$(metric_value "$far_stream_port" 'lather_stream_bytes_total{direction="out"}')
                streamed=$(( $(metric_value "$near_stream_port" 'lather_stream_messages_total{service="near",way="stream"}') - streamed0 )) ;;
        esac
        if [ "$mode" != single ]; then
            fwd=$(awk -v a="$bytes_in0" -v b="$fwd" -v n="$ok" 'BEGIN {printf "%.0f", (b - a) / n}')
            back=$(awk -v a="$bytes_out0" -v b="$back" -v n="$ok" 'BEGIN {printf "%.0f", (b - a) / n}')
            hop=$(awk -v a="$us" -v s="${cpu[single,$round]}" 'BEGIN {printf "%.1f", a - s}')
        fi
        echo "| $round | $mode | $rps | $us | $hop | $fwd | $back | $streamed |" >>"$out/table.md"
        if [ "$WRK_SECONDS" -gt 0 ]; then
            # shellcheck disable=SC2086
            t0=$(ticks $pids)
            wrk -t1 -c"$CONNECTIONS" -d"${WRK_SECONDS}s" -s "$wrk_lua" "$url" >"$out/wrk-$mode-$round.txt" 2>&1
            # shellcheck disable=SC2086
            t1=$(ticks $pids)
            reqs=$(awk '/requests in/ {print $1}' "$out/wrk-$mode-$round.txt")
            bad=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$out/wrk-$mode-$round.txt")
            [ -z "$bad" ] || die "wrk: $bad answers were not 2xx ($mode, round $round)"
            wrps=$(awk '/Requests\/sec/ {printf "%.1f", $2}' "$out/wrk-$mode-$round.txt")
            wus=$(awk -v t="$((t1 - t0))" -v hz="$hz" -v n="$reqs" 'BEGIN {printf "%.1f", t / hz * 1e6 / n}')
            rate[wrk-$mode,$round]=$wrps
            cpu[wrk-$mode,$round]=$wus
            whop=""
            [ "$mode" != single ] && whop=$(awk -v a="$wus" -v s="${cpu[wrk-single,$round]}" 'BEGIN {printf "%.1f", a - s}')
            echo "| $round | $mode (wrk) | $wrps | $wus | $whop | | | |" >>"$out/table.md"
        fi
    done
done
{
    echo
    echo "| medians | messages/s | gateway CPU µs/message |"
    echo "|---|---:|---:|"
    modes="single plain stream"
    [ "$WRK_SECONDS" -gt 0 ] && modes="$modes wrk-single wrk-plain wrk-stream"
    for mode in $modes; do
        r=$(for i in $(seq 1 "$ROUNDS"); do echo "${rate[$mode,$i]}"; done | median)
        c=$(for i in $(seq 1 "$ROUNDS"); do echo "${cpu[$mode,$i]}"; done | median)
        echo "| $mode | $r | $c |"
    done
    echo
    echo "per round: stream/plain messages/s, and hop CPU stream/plain ((near+far) − single):"
    for i in $(seq 1 "$ROUNDS"); do
        awk -v rs="${rate[stream,$i]}" -v rp="${rate[plain,$i]}" -v cs="${cpu[stream,$i]}" \
            -v cp="${cpu[plain,$i]}" -v c1="${cpu[single,$i]}" -v i="$i" \
            'BEGIN {printf "round %d: throughput %.2fx, hop CPU %.2fx\n", i, rs / rp, (cs - c1) / (cp - c1)}'
        if [ "$WRK_SECONDS" -gt 0 ]; then
            awk -v rs="${rate[wrk-stream,$i]}" -v rp="${rate[wrk-plain,$i]}" -v cs="${cpu[wrk-stream,$i]}" \
                -v cp="${cpu[wrk-plain,$i]}" -v c1="${cpu[wrk-single,$i]}" -v i="$i" \
                'BEGIN {printf "round %d (wrk): throughput %.2fx, hop CPU %.2fx\n", i, rs / rp, (cs - c1) / (cp - c1)}'
        fi
    done
} >>"$out/table.md"
cat "$out/table.md"
