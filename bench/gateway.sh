#!/usr/bin/env bash
# Cost of lather's gateway hop: one lather process serves the built-in echo
# service on /echo and a gateway service on /gateway whose upstream is that
# same /echo. The load generator benches /echo and /gateway (closed loop,
# 32 connections by default), alternating for ROUNDS rounds, and prints the
# gateway/echo ratios.
#
# Results: target/bench-results/gateway-<timestamp>/.
#
# Environment: DURATION=10, WARMUP=2, CONNECTIONS=32, ROUNDS=2,
# PAYLOAD_BYTES=100, BENCH_THREADS=1, SERVER_CPUS, CLIENT_CPUS, LATHER,
# BENCH_CMD, SKIP_BUILD=1 (see echo-vs-gsoap.sh); SERVER_EXTRA adds lines to the
# server's [server] table (e.g. "pin_io_threads = false").
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

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
echo
printf '%-9s %5s %12s %10s %10s %10s %8s\n' path round "req/s" "p50 ms" "p99 ms" "p99.9 ms" failed
for ((round = 1; round <= ROUNDS; round++)); do
    for t in "${targets[@]}"; do
        printf '%-9s %5s %12.1f %10s %10s %10s %8s\n' "/$t" "$round" "${rps[$t,$round]}" \
            "$(ms "${p50[$t,$round]}")" "$(ms "${p99[$t,$round]}")" \
            "$(ms "${p999[$t,$round]}")" "${failed[$t,$round]}"
    done
done

g_rps=() e_rps=() g50=() e50=() g99=() e99=() g999=() e999=()
for ((round = 1; round <= ROUNDS; round++)); do
    g_rps+=("${rps[gateway,$round]}") e_rps+=("${rps[echo,$round]}")
    g50+=("${p50[gateway,$round]}") e50+=("${p50[echo,$round]}")
    g99+=("${p99[gateway,$round]}") e99+=("${p99[echo,$round]}")
    g999+=("${p999[gateway,$round]}") e999+=("${p999[echo,$round]}")
done
r_rps="$(ratio "$(mean "${g_rps[@]}")" "$(mean "${e_rps[@]}")")"
r50="$(ratio "$(mean "${g50[@]}")" "$(mean "${e50[@]}")")"
r99="$(ratio "$(mean "${g99[@]}")" "$(mean "${e99[@]}")")"
r999="$(ratio "$(mean "${g999[@]}")" "$(mean "${e999[@]}")")"

{
    printf '{\n  "duration_s": %s,\n  "warmup_s": %s,\n  "connections": %s,\n  "payload_bytes": %s,\n  "runs": [\n' \
        "$DURATION" "$WARMUP" "$CONNECTIONS" "$PAYLOAD_BYTES"
    sep=""
    for ((round = 1; round <= ROUNDS; round++)); do
        for t in "${targets[@]}"; do
            printf '%s    {"path": "/%s", "round": %s, "rps": %s, "p50_us": %s, "p99_us": %s, "p999_us": %s, "failed": %s, "report": "%s-%s.json"}' \
                "$sep" "$t" "$round" "${rps[$t,$round]}" "${p50[$t,$round]}" "${p99[$t,$round]}" \
                "${p999[$t,$round]}" "${failed[$t,$round]}" "$t" "$round"
            sep=$',\n'
        done
    done
    printf '\n  ],\n  "ratio_gateway_over_echo": {"rps": %s, "p50": %s, "p99": %s, "p999": %s}\n}\n' \
        "$(json_ratio "$r_rps")" "$(json_ratio "$r50")" "$(json_ratio "$r99")" "$(json_ratio "$r999")"
} >"$out_dir/summary.json"

echo
printf 'gateway/echo (mean of %s rounds): req/s %s   p50 %s   p99 %s   p99.9 %s\n' \
    "$ROUNDS" "$r_rps" "$r50" "$r99" "$r999"
echo
log "results in $out_dir"
