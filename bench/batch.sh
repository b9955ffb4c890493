#!/usr/bin/env bash
# Message batching (issue 13, item 3a): operations/s through an echo service with a
# 3-handler chain in three stages — CHAIN=light (the default: monitor | wsa | digest,
# 1 round) or CHAIN=burn (monitor | digest, 1 round | cpu-burn, 10 µs) — sent as
# single requests or as batches of N items (urn:lather:batch), each item running the chain
# as a message of its own. lather-bench (closed loop) and wrk (-t1), CONNECTIONS each,
# ROUNDS rounds interleaved; operations/s = requests/s × N; server CPU per operation.
#
# Environment: CHAIN=light SIZES="1 5 10 25" ROUNDS=3 DURATION=5 CONNECTIONS=16 SKIP_BUILD=1
# Results: target/bench-results/batch-<timestamp>/ (config, bodies, reports, table.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

SIZES="${SIZES:-1 5 10 25}"
CHAIN="${CHAIN:-light}"
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-5}"
CONNECTIONS="${CONNECTIONS:-16}"
LATHER="${LATHER:-$repo/target/release/lather}"
LATHER_BENCH="${LATHER_BENCH:-$repo/target/release/lather-bench}"
command -v wrk >/dev/null 2>&1 || die "wrk not found (apt-get install -y wrk)"

build_lather
out="$(results_dir batch)"
log "results in $out"
port="$(free_port)"
cat >"$out/lather.toml" <<TOML
[server]
# Off while measuring throughput: a log line per request costs more than an echo.
access_log = false
listen = "127.0.0.1:$port"
max_batch_items = 100

[handlers.mon]
kind = "monitor"

[handlers.hash]
kind = "digest"
rounds = 1

[handlers.burn]
kind = "cpu-burn"
micros = 10

[handlers.addressing]
kind = "wsa"

[[service]]
name = "echo"
path = "/echo"
builtin = "echo"
TOML
case "$CHAIN" in
    light) echo 'request = [["mon"], ["addressing"], ["hash"]]' >>"$out/lather.toml" ;;
    burn) echo 'request = [["mon"], ["hash"], ["burn"]]' >>"$out/lather.toml" ;;
    *) die "CHAIN must be light or burn" ;;
esac
start_bg "$out/lather.log" "$LATHER" serve --config "$out/lather.toml"
pid=$bg_pid
wait_for lather "$pid" "$out/lather.log" 20 health_ok "$port"
url="http://127.0.0.1:$port/echo"

item='<ns:echo xmlns:ns="urn:lather:echo"><text>xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx</text></ns:echo>'
for n in $SIZES; do
    if [ "$n" = 1 ]; then
        payload="$item"
    else
        payload='<lb:Batch xmlns:lb="urn:lather:batch">'
        for _ in $(seq 1 "$n"); do payload="$payload<lb:Item>$item</lb:Item>"; done
        payload="$payload</lb:Batch>"
    fi
    printf '<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>%s</soap:Body></soap:Envelope>' \
        "$payload" >"$out/body-$n.xml"
    cat >"$out/post-$n.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "text/xml; charset=utf-8"
wrk.headers["SOAPAction"] = '"urn:lather:echo#echo"'
local f = io.open("$out/body-$n.xml", "rb"); wrk.body = f:read("*a"); f:close()
LUA
done
hz=$(getconf CLK_TCK)

declare -A ops cpu
for round in $(seq 1 "$ROUNDS"); do
    for n in $SIZES; do
        log "round $round: $n per request"
        json="$out/lb-$n-$round.json"
        expect="urn:lather:echo"
        [ "$n" = 1 ] || expect='<lb:Result status="200">'
        "$LATHER_BENCH" http "$url" --connections "$CONNECTIONS" --duration "$DURATION" --warmup 1 \
            --body "$out/body-$n.xml" --expect "$expect" --server-pid "$pid" --quiet --json "$json" >/dev/null
        ops[lb-$n,$round]=$(awk -v r="$(json_num "$json" rps)" -v n="$n" 'BEGIN {printf "%.1f", r * n}')
        cpu[lb-$n,$round]=$(awk -v c="$(json_num "$json" cpu_us_per_request)" -v n="$n" 'BEGIN {printf "%.2f", c / n}')
        before=$(cpu_ticks "$pid")
        wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -s "$out/post-$n.lua" "$url" >"$out/wrk-$n-$round.txt"
        after=$(cpu_ticks "$pid")
        reqs=$(awk '/requests in/ {print $1}' "$out/wrk-$n-$round.txt")
        bad=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$out/wrk-$n-$round.txt")
        [ -z "$bad" ] || die "wrk: $bad answers were not 2xx ($n per request, round $round)"
        ops[wrk-$n,$round]=$(awk -v r="$(awk '/Requests\/sec/ {print $2}' "$out/wrk-$n-$round.txt")" -v n="$n" 'BEGIN {printf "%.1f", r * n}')
        cpu[wrk-$n,$round]=$(awk -v t=$((after - before)) -v hz="$hz" -v q="$reqs" -v n="$n" 'BEGIN {printf "%.2f", t / hz * 1e6 / q / n}')
    done
done
{
    echo "chain: $CHAIN ($(grep '^request' "$out/lather.toml"))"
    echo
    echo "| generator | operations per request | operations/s | × single | server CPU µs/operation |"
    echo "|---|---:|---:|---:|---:|"
    for g in lb wrk; do
        name="lather-bench -c$CONNECTIONS"
        [ "$g" = wrk ] && name="wrk -t1 -c$CONNECTIONS"
        base=$(for r in $(seq 1 "$ROUNDS"); do echo "${ops[$g-1,$r]}"; done | median)
        for n in $SIZES; do
            o=$(for r in $(seq 1 "$ROUNDS"); do echo "${ops[$g-$n,$r]}"; done | median)
            c=$(for r in $(seq 1 "$ROUNDS"); do echo "${cpu[$g-$n,$r]}"; done | median)
            ratio=$(for r in $(seq 1 "$ROUNDS"); do awk -v a="${ops[$g-$n,$r]}" -v b="${ops[$g-1,$r]}" 'BEGIN {printf "%.3f\n", a / b}'; done | median)
            printf '| %s | %s | %.0f | %.2f | %.2f |\n' "$name" "$n" "$o" "$ratio" "$c"
        done
    done
} >"$out/table.md"
cat "$out/table.md"
log "results in $out"
