#!/usr/bin/env bash
# lather's built-in SOAP echo service vs. a gSOAP 2.8 echo server.
#
# Builds lather (release) and the gSOAP server (bench/gsoap/build.sh), starts
# both on free loopback ports, checks one request against each, then runs the
# load generator (`lather-bench http`, closed loop) against gSOAP, lather,
# gSOAP, lather … so that run-to-run noise is visible, and prints req/s and
# latency percentiles per run plus the lather/gSOAP ratios.
#
# Results: target/bench-results/echo-vs-gsoap-<timestamp>/ (one report JSON
# per run, summary.json, server logs).
#
# Environment:
#   DURATION=10       measured seconds per run
#   WARMUP=2          warm-up seconds per run
#   CONNECTIONS=32    generator connections
#   ROUNDS=2          gSOAP+lather pairs
#   PAYLOAD_BYTES=100 size of the echoed text
#   BENCH_THREADS=1   generator threads
#   SERVER_CPUS / CLIENT_CPUS  optional taskset CPU lists for servers / generator
#   LATHER=target/release/lather   lather binary
#   LATHER_BENCH=target/release/lather-bench   load generator binary
#   BENCH_CMD         generator command instead of "$LATHER_BENCH http"
#   SKIP_BUILD=1      do not run cargo build
#   SKIP_LATHER=1     bench gSOAP only (lather is not started)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

bench_defaults
SKIP_LATHER="${SKIP_LATHER:-0}"

out_dir="$(results_dir echo-vs-gsoap)"

# --- build ---------------------------------------------------------------
build_lather
if [ -z "${BENCH_CMD:-}" ] || [ "$SKIP_LATHER" != "1" ]; then
    [ -x "$LATHER" ] || die "$LATHER not found (build lather-cli or set LATHER)"
fi
log "building the gSOAP echo server"
gsoap_bin="$("$here/gsoap/build.sh")"
[ -x "$gsoap_bin" ] || die "gSOAP build produced no binary"

# --- start servers -------------------------------------------------------
gsoap_port="$(free_port)"
start_bg "$out_dir/gsoap.log" "$gsoap_bin" "$gsoap_port"
gsoap_pid=$bg_pid
wait_for gSOAP "$gsoap_pid" "$out_dir/gsoap.log" 10 port_open "$gsoap_port"
gsoap_url="http://127.0.0.1:$gsoap_port/"
log "gSOAP (pid $gsoap_pid) on $gsoap_url"
verify_echo gSOAP "$gsoap_url" "$out_dir/probe-gsoap.json"

servers=(gsoap)
declare -A url=([gsoap]="$gsoap_url")
if [ "$SKIP_LATHER" != "1" ]; then
    lather_port="$(free_port)"
    config="$out_dir/lather.toml"
    cat >"$config" <<TOML
[server]
# Off while measuring throughput: a log line per request costs more than an echo.
access_log = false
listen = "127.0.0.1:$lather_port"

[[service]]
name = "echo"
path = "/echo"
builtin = "echo"
TOML
    start_bg "$out_dir/lather.log" "$LATHER" serve --config "$config"
    lather_pid=$bg_pid
    wait_for lather "$lather_pid" "$out_dir/lather.log" 10 health_ok "$lather_port"
    url[lather]="http://127.0.0.1:$lather_port/echo"
    log "lather (pid $lather_pid) on ${url[lather]}"
    verify_echo lather "${url[lather]}" "$out_dir/probe-lather.json"
    servers+=(lather)
fi

# --- bench ---------------------------------------------------------------
declare -A rps p50 p99 p999 failed
for ((round = 1; round <= ROUNDS; round++)); do
    for server in "${servers[@]}"; do
        json="$out_dir/$server-$round.json"
        log "round $round: $server (${DURATION}s + ${WARMUP}s warm-up, $CONNECTIONS connections)"
        bench_cmd "${url[$server]}" --connections "$CONNECTIONS" --duration "$DURATION" \
            --warmup "$WARMUP" --payload-bytes "$PAYLOAD_BYTES" --threads "$BENCH_THREADS" \
            --expect "urn:lather:echo" --json "$json"
        rps[$server,$round]="$(json_num "$json" rps)"
        p50[$server,$round]="$(json_num "$json" p50)"
        p99[$server,$round]="$(json_num "$json" p99)"
        p999[$server,$round]="$(json_num "$json" p999)"
        failed[$server,$round]="$(json_num "$json" requests_failed)"
    done
done

# --- summary -------------------------------------------------------------
ms() { awk -v us="$1" 'BEGIN { printf "%.3f", us / 1000 }'; }
echo
printf '%-8s %5s %12s %10s %10s %10s %8s\n' server round "req/s" "p50 ms" "p99 ms" "p99.9 ms" failed
for ((round = 1; round <= ROUNDS; round++)); do
    for server in "${servers[@]}"; do
        printf '%-8s %5s %12.1f %10s %10s %10s %8s\n' "$server" "$round" \
            "${rps[$server,$round]}" "$(ms "${p50[$server,$round]}")" \
            "$(ms "${p99[$server,$round]}")" "$(ms "${p999[$server,$round]}")" \
            "${failed[$server,$round]}"
    done
done

summary="$out_dir/summary.json"
{
    printf '{\n  "duration_s": %s,\n  "warmup_s": %s,\n  "connections": %s,\n  "payload_bytes": %s,\n  "runs": [\n' \
        "$DURATION" "$WARMUP" "$CONNECTIONS" "$PAYLOAD_BYTES"
    sep=""
    for ((round = 1; round <= ROUNDS; round++)); do
        for server in "${servers[@]}"; do
            printf '%s    {"server": "%s", "round": %s, "rps": %s, "p50_us": %s, "p99_us": %s, "p999_us": %s, "failed": %s, "report": "%s-%s.json"}' \
                "$sep" "$server" "$round" "${rps[$server,$round]}" "${p50[$server,$round]}" \
                "${p99[$server,$round]}" "${p999[$server,$round]}" "${failed[$server,$round]}" \
                "$server" "$round"
            sep=$',\n'
        done
    done
    printf '\n  ]'
    if [ "$SKIP_LATHER" != "1" ]; then
        l_rps=() g_rps=() l50=() g50=() l99=() g99=() l999=() g999=()
        for ((round = 1; round <= ROUNDS; round++)); do
            l_rps+=("${rps[lather,$round]}") g_rps+=("${rps[gsoap,$round]}")
            l50+=("${p50[lather,$round]}") g50+=("${p50[gsoap,$round]}")
            l99+=("${p99[lather,$round]}") g99+=("${p99[gsoap,$round]}")
            l999+=("${p999[lather,$round]}") g999+=("${p999[gsoap,$round]}")
        done
        r_rps="$(ratio "$(mean "${l_rps[@]}")" "$(mean "${g_rps[@]}")")"
        r50="$(ratio "$(mean "${l50[@]}")" "$(mean "${g50[@]}")")"
        r99="$(ratio "$(mean "${l99[@]}")" "$(mean "${g99[@]}")")"
        r999="$(ratio "$(mean "${l999[@]}")" "$(mean "${g999[@]}")")"
        printf ',\n  "ratio_lather_over_gsoap": {"rps": %s, "p50": %s, "p99": %s, "p999": %s}' \
            "$(json_ratio "$r_rps")" "$(json_ratio "$r50")" "$(json_ratio "$r99")" "$(json_ratio "$r999")"
    fi
    printf '\n}\n'
} >"$summary"

if [ "$SKIP_LATHER" != "1" ]; then
    echo
    printf 'lather/gSOAP (mean of %s rounds): req/s %s   p50 %s   p99 %s   p99.9 %s\n' \
        "$ROUNDS" "$r_rps" "$r50" "$r99" "$r999"
    echo "(req/s: higher is better for lather above 1; latency: lower is better for lather below 1)"
fi
echo
log "results in $out_dir"
