#!/usr/bin/env bash
# Cost of lather's gateway hop: one lather process serves the built-in echo
# service on /echo and a gateway service on /gateway whose upstream is that
# same /echo. The load generator benches /echo and /gateway (closed loop,
# 32 connections by default), alternating for ROUNDS rounds, and prints the
# gateway/echo ratios. The reverse proxies named in PEERS stand in front of the same
# /echo in the same rounds (bench/proxy_peer.sh), each with its own ratio to /echo: what a
# hop costs elsewhere on this machine.
#
# Results: target/bench-results/gateway-<timestamp>/.
#
# Environment: DURATION=10, WARMUP=2, CONNECTIONS=32, ROUNDS=2,
# PAYLOAD_BYTES=100, BENCH_THREADS=1, SERVER_CPUS, CLIENT_CPUS, LATHER,
# BENCH_CMD, SKIP_BUILD=1 (see echo-vs-gsoap.sh); SERVER_EXTRA adds lines to the
# server's [server] table (e.g. "pin_io_threads = false"); PEERS (default: those of
# "nginx haproxy" installed; "" for none).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"
# shellcheck source=SCRIPTDIR/proxy_peer.sh
. "$here/proxy_peer.sh"

bench_defaults

out_dir="$(results_dir gateway)"

build_lather
[ -x "$LATHER" ] || die "$LATHER not found (build lather-cli or set LATHER)"

port="$(free_port)"
config="$out_dir/lather.toml"
cat >"$config" <<TOML
[server]
# Off while measuring throughput: a log line per request costs more than an echo.
access_log = false
listen = "127.0.0.1:$port"
${SERVER_EXTRA:-}

[[service]]
name = "echo"
path = "/echo"
builtin = "echo"

[[service]]
name = "gateway"
path = "/gateway"
upstream = ["http://127.0.0.1:$port/echo"]
TOML

start_bg "$out_dir/lather.log" "$LATHER" serve --config "$config"
lather_pid=$bg_pid
wait_for lather "$lather_pid" "$out_dir/lather.log" 10 health_ok "$port"
log "lather (pid $lather_pid) on 127.0.0.1:$port"

targets=(echo gateway)
declare -A url=([echo]="http://127.0.0.1:$port/echo" [gateway]="http://127.0.0.1:$port/gateway")
if [ -z "${PEERS+set}" ]; then
    PEERS=""
    for peer in nginx haproxy; do
        proxy_installed "$peer" && PEERS="$PEERS $peer"
    done
fi
for peer in $PEERS; do
    proxy_peer "$peer" "$out_dir/$peer" "$port"
    log "$peer (pid $proxy_pid) on 127.0.0.1:$started_port, in front of /echo"
    url[$peer]="http://127.0.0.1:$started_port/echo"
    targets+=("$peer")
done
for t in "${targets[@]}"; do
    verify_echo "/$t" "${url[$t]}" "$out_dir/probe-$t.json"
done

declare -A rps p50 p99 p999 failed
for ((round = 1; round <= ROUNDS; round++)); do
    for t in "${targets[@]}"; do
        json="$out_dir/$t-$round.json"
        log "round $round: /$t (${DURATION}s + ${WARMUP}s warm-up, $CONNECTIONS connections)"
        bench_cmd "${url[$t]}" --connections "$CONNECTIONS" --duration "$DURATION" \
            --warmup "$WARMUP" --payload-bytes "$PAYLOAD_BYTES" --threads "$BENCH_THREADS" \
            --expect "urn:lather:echo" --json "$json"
        rps[$t,$round]="$(json_num "$json" rps)"
        p50[$t,$round]="$(json_num "$json" p50)"
        p99[$t,$round]="$(json_num "$json" p99)"
        p999[$t,$round]="$(json_num "$json" p999)"
        failed[$t,$round]="$(json_num "$json" requests_failed)"
    done
done

ms() { awk -v us="$1" 'BEGIN { printf "%.3f", us / 1000 }'; }
# label T : how a target is shown: lather's paths as paths, a peer by its name.
label() { case $1 in echo | gateway) echo "/$1" ;; *) echo "$1 -> /echo" ;; esac; }
echo
printf '%-17s %5s %12s %10s %10s %10s %8s\n' target round "req/s" "p50 ms" "p99 ms" "p99.9 ms" failed
for ((round = 1; round <= ROUNDS; round++)); do
    for t in "${targets[@]}"; do
        printf '%-17s %5s %12.1f %10s %10s %10s %8s\n' "$(label "$t")" "$round" "${rps[$t,$round]}" \
            "$(ms "${p50[$t,$round]}")" "$(ms "${p99[$t,$round]}")" \
            "$(ms "${p999[$t,$round]}")" "${failed[$t,$round]}"
    done
done

# ratios T : T's mean req/s, p50, p99 and p99.9 over /echo's, into ratio_json[T] (JSON
# fields) and ratio_text[T] (for the terminal).
declare -A ratio_json ratio_text
ratios() {
    local t=$1 key r json="" text=""
    for key in rps p50 p99 p999; do
        local -n of=$key
        local ours=() echos=()
        for ((round = 1; round <= ROUNDS; round++)); do
            ours+=("${of[$t,$round]}") echos+=("${of[echo,$round]}")
        done
        r="$(ratio "$(mean "${ours[@]}")" "$(mean "${echos[@]}")")"
        json="$json${json:+, }\"$key\": $(json_ratio "$r")"
        text="$text${text:+   }${key/rps/req\/s} $r"
    done
    ratio_json[$t]="{$json}"
    ratio_text[$t]=$text
}
# Every target but /echo, the first.
compared=("${targets[@]:1}")
for t in "${compared[@]}"; do ratios "$t"; done

{
    printf '{\n  "duration_s": %s,\n  "warmup_s": %s,\n  "connections": %s,\n  "payload_bytes": %s,\n  "runs": [\n' \
        "$DURATION" "$WARMUP" "$CONNECTIONS" "$PAYLOAD_BYTES"
    sep=""
    for ((round = 1; round <= ROUNDS; round++)); do
        for t in "${targets[@]}"; do
            printf '%s    {"target": "%s", "round": %s, "rps": %s, "p50_us": %s, "p99_us": %s, "p999_us": %s, "failed": %s, "report": "%s-%s.json"}' \
                "$sep" "$(label "$t")" "$round" "${rps[$t,$round]}" "${p50[$t,$round]}" "${p99[$t,$round]}" \
                "${p999[$t,$round]}" "${failed[$t,$round]}" "$t" "$round"
            sep=$',\n'
        done
    done
    printf '\n  ],\n  "ratio_over_echo": {'
    sep=""
    for t in "${compared[@]}"; do
        printf '%s\n    "%s": %s' "$sep" "$t" "${ratio_json[$t]}"
        sep=","
    done
    printf '\n  }\n}\n'
} >"$out_dir/summary.json"

echo
for t in "${compared[@]}"; do
    printf '%s over /echo (mean of %s rounds): %s\n' "$(label "$t")" "$ROUNDS" "${ratio_text[$t]}"
done
echo
log "results in $out_dir"
