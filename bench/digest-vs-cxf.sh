#!/usr/bin/env bash
# lather's `digest` handlers vs. Apache CXF 4 interceptors doing the same work.
#
# Both engines serve a SOAP 1.1 echo whose request path hashes the whole raw
# request with SHA-256, `rounds` times in a row, in each of DIGESTS (5)
# places: lather runs DIGESTS `digest` handlers in one parallel stage, CXF
# runs DIGESTS interceptors in its IN chain (bench/cxf, see its README.md).
#
# For each value of ROUNDS_LIST the script starts lather and CXF on free
# loopback ports, checks one request against each (200, a SOAP envelope, the
# payload echoed), loads CXF for WARMUP_CXF seconds so that its JIT settles,
# gives lather the same warm-up, then measures CXF, lather, CXF, lather …
# (ROUNDS pairs) with the load generator (`lather-bench http`, closed loop,
# same connections and duration), stops both and goes on with the next value.
# It prints req/s and latency per run, then the means per engine and the
# lather/CXF ratios.
#
# Results: target/bench-results/digest-vs-cxf-<timestamp>/ (one report JSON
# per run and warm-up, summary.json, server logs and lather's configs).
#
# Environment:
#   ROUNDS_LIST="10 100"  SHA-256 rounds per handler/interceptor; one server pair per value
#   DIGESTS=5            digest handlers (lather) / interceptors (CXF)
#   WARMUP_CXF=120       seconds of load on CXF before its measured runs (JIT warm-up)
#   WARMUP_LATHER=$WARMUP_CXF  the same for lather
#   DURATION=10          measured seconds per run
#   WARMUP=2             warm-up seconds at the start of every measured run
#   CONNECTIONS=32       generator connections
#   ROUNDS=2             CXF+lather pairs of measured runs per ROUNDS_LIST value
#   PAYLOAD_BYTES=100    size of the echoed text
#   BENCH_THREADS=1      generator threads
#   SERVER_CPUS / CLIENT_CPUS  optional taskset CPU lists for servers / generator
#   JAVA=java            the JVM; JAVA_OPTS (default empty: the JVM's own heap and GC choice)
#   CXF_JAR              use this jar instead of building bench/cxf
#   LATHER=target/release/lather   lather binary
#   LATHER_BENCH=target/release/lather-bench   load generator binary
#   BENCH_CMD            generator command instead of "$LATHER_BENCH http"
#   SKIP_BUILD=1         build neither lather nor the CXF server
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

bench_defaults
ROUNDS_LIST="${ROUNDS_LIST:-10 100}"
DIGESTS="${DIGESTS:-5}"
WARMUP_CXF="${WARMUP_CXF:-120}"
WARMUP_LATHER="${WARMUP_LATHER:-$WARMUP_CXF}"
JAVA="${JAVA:-java}"
JAVA_OPTS="${JAVA_OPTS:-}"

for n in $ROUNDS_LIST "$DIGESTS"; do
    [[ "$n" =~ ^[0-9]+$ ]] || die "ROUNDS_LIST and DIGESTS must be whole numbers, got '$n'"
done
[ "$DIGESTS" -ge 1 ] || die "DIGESTS must be at least 1"

out_dir="$(results_dir digest-vs-cxf)"

# --- build ---------------------------------------------------------------
build_lather
[ -x "$LATHER" ] || die "$LATHER not found (build lather-cli or set LATHER)"
if [ -z "${CXF_JAR:-}" ]; then
    if [ "${SKIP_BUILD:-0}" = "1" ]; then
        CXF_JAR="$here/cxf/target/cxf-digest-echo.jar"
    else
        log "building the CXF echo server"
        CXF_JAR="$("$here/cxf/build.sh")"
    fi
fi
[ -f "$CXF_JAR" ] || die "CXF jar $CXF_JAR not found (run bench/cxf/build.sh or set CXF_JAR)"
"$JAVA" -version 2>"$out_dir/java-version.txt" || die "$JAVA does not run"

# --- helpers -------------------------------------------------------------
# The request the generator sends, for the curl check (same shape, own text).
probe_text="digest-probe-0123456789"
probe_body="<?xml version=\"1.0\" encoding=\"UTF-8\"?><soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap:Body><ns:echo xmlns:ns=\"urn:lather:echo\"><text>$probe_text</text></ns:echo></soap:Body></soap:Envelope>"

# verify_envelope NAME URL OUTFILE : with curl, the echo answers 200 with a
# SOAP 1.1 envelope holding the request's payload and no Fault.
verify_envelope() {
    local name=$1 url=$2 out=$3 status
    command -v curl >/dev/null 2>&1 || {
        log "$name: curl not found; only the generator's probe checks the answer"
        return 0
    }
    status="$(curl -sS -o "$out" -w '%{http_code}' --max-time 10 -X POST \
        -H 'Content-Type: text/xml; charset=utf-8' -H 'SOAPAction: "urn:lather:echo#echo"' \
        --data-binary "$probe_body" "$url")" || die "$name: curl could not reach $url"
    if [ "$status" != "200" ] ||
        ! grep -q 'Envelope xmlns:[A-Za-z0-9]*="http://schemas.xmlsoap.org/soap/envelope/"' "$out" ||
        ! grep -q "<text>$probe_text</text>" "$out" || grep -q 'Fault>' "$out"; then
        log "$name: expected 200 with a SOAP 1.1 envelope echoing the payload; got $status:"
        cat "$out" >&2
        echo >&2
        exit 1
    fi
    log "$name: curl check OK (200, SOAP 1.1 envelope, payload echoed)"
}

# load URL JSON SECONDS WARMUP_SECONDS : one closed-loop generator run.
load() {
    bench_cmd "$1" --connections "$CONNECTIONS" --duration "$3" --warmup "$4" \
        --payload-bytes "$PAYLOAD_BYTES" --threads "$BENCH_THREADS" \
        --expect "urn:lather:echo" --json "$2"
}

# lather_config FILE PORT ROUNDS : the echo service with DIGESTS digest
# handlers in one stage.
lather_config() {
    local file=$1 port=$2 rounds=$3 names="" i
    for ((i = 1; i <= DIGESTS; i++)); do
        names+="${names:+,}\"d$i\""
    done
    {
        # access_log = false: a log line per request would slow the measured server.
        printf '[server]\naccess_log = false\nlisten = "127.0.0.1:%s"\n\n' "$port"
        printf '[[service]]\nname = "echo"\npath = "/echo"\nbuiltin = "echo"\n'
        printf 'request = [[%s]]\n' "$names"
        for ((i = 1; i <= DIGESTS; i++)); do
            printf '\n[handlers.d%s]\nkind = "digest"\nrounds = %s\n' "$i" "$rounds"
        done
    } >"$file"
}

# cxf_ready PORT LOGFILE : the CXF server has published its endpoint and accepts.
cxf_ready() { grep -qs '^cxf-digest-echo: http://' "$2" && port_open "$1"; }

ms() { awk -v us="$1" 'BEGIN { printf "%.3f", us / 1000 }'; }

# --- per ROUNDS_LIST value: start, check, warm up, measure, stop ----------
engines=(cxf lather)
declare -A rps p50 p99 failed
for digest_rounds in $ROUNDS_LIST; do
    tag="r$digest_rounds"
    log "=== $DIGESTS digests x $digest_rounds SHA-256 rounds ==="

    lather_port="$(free_port)"
    config="$out_dir/lather-$tag.toml"
    lather_config "$config" "$lather_port" "$digest_rounds"
    "$LATHER" check --config "$config" >"$out_dir/lather-check-$tag.txt" 2>&1 ||
        { cat "$out_dir/lather-check-$tag.txt" >&2; die "lather check refused $config"; }
    start_bg "$out_dir/lather-$tag.log" "$LATHER" serve --config "$config"
    lather_pid=$bg_pid
    wait_for lather "$lather_pid" "$out_dir/lather-$tag.log" 10 health_ok "$lather_port"

    cxf_port="$(free_port)"
    # shellcheck disable=SC2086 # JAVA_OPTS is a word list on purpose
    start_bg "$out_dir/cxf-$tag.log" "$JAVA" $JAVA_OPTS -jar "$CXF_JAR" \
        "$cxf_port" "$digest_rounds" "$DIGESTS"
    cxf_pid=$bg_pid
    wait_for CXF "$cxf_pid" "$out_dir/cxf-$tag.log" 60 cxf_ready "$cxf_port" "$out_dir/cxf-$tag.log"

    declare -A url=(
        [lather]="http://127.0.0.1:$lather_port/echo"
        [cxf]="http://127.0.0.1:$cxf_port/echo"
    )
    log "lather (pid $lather_pid) on ${url[lather]}, CXF (pid $cxf_pid) on ${url[cxf]}"
    for engine in "${engines[@]}"; do
        verify_envelope "$engine" "${url[$engine]}" "$out_dir/probe-$engine-$tag.xml"
        verify_echo "$engine" "${url[$engine]}" "$out_dir/probe-$engine-$tag.json"
    done

    log "warm-up: CXF under load for ${WARMUP_CXF}s"
    load "${url[cxf]}" "$out_dir/warmup-cxf-$tag.json" "$WARMUP_CXF" 0
    log "warm-up: CXF did $(json_num "$out_dir/warmup-cxf-$tag.json" rps) req/s"
    log "warm-up: lather under load for ${WARMUP_LATHER}s"
    load "${url[lather]}" "$out_dir/warmup-lather-$tag.json" "$WARMUP_LATHER" 0
    log "warm-up: lather did $(json_num "$out_dir/warmup-lather-$tag.json" rps) req/s"

    for ((round = 1; round <= ROUNDS; round++)); do
        for engine in "${engines[@]}"; do
            json="$out_dir/$engine-$tag-$round.json"
            log "rounds $digest_rounds, run $round: $engine (${DURATION}s + ${WARMUP}s warm-up, $CONNECTIONS connections)"
            load "${url[$engine]}" "$json" "$DURATION" "$WARMUP"
            key="$engine,$digest_rounds,$round"
            rps[$key]="$(json_num "$json" rps)"
            p50[$key]="$(json_num "$json" p50)"
            p99[$key]="$(json_num "$json" p99)"
            failed[$key]="$(json_num "$json" requests_failed)"
            if [ "${failed[$key]:-0}" != "0" ]; then
                log "warning: $engine had ${failed[$key]} failed requests in run $round"
            fi
        done
    done

    # Both engines say how often their digest steps ran (a check that the
    # work was done): lather on /metrics, CXF when it stops.
    if command -v curl >/dev/null 2>&1; then
        curl -sS --max-time 5 "http://127.0.0.1:$lather_port/metrics" \
            >"$out_dir/lather-metrics-$tag.txt" 2>/dev/null || true
    fi
    log "lather: digest handler calls: $(sed -n \
        's/^lather_handler_calls_total{service="echo",handler="\([^"]*\)"} \([0-9]*\)$/\1=\2/p' \
        "$out_dir/lather-metrics-$tag.txt" 2>/dev/null | tr '\n' ' ')"
    stop_all
    log "CXF: $(grep -h 'requests hashed' "$out_dir/cxf-$tag.log" || echo 'no count in its log')"
done

# --- summary -------------------------------------------------------------
echo
printf '%-7s %7s %4s %12s %10s %10s %8s\n' engine rounds run "req/s" "p50 ms" "p99 ms" failed
for digest_rounds in $ROUNDS_LIST; do
    for ((round = 1; round <= ROUNDS; round++)); do
        for engine in "${engines[@]}"; do
            key="$engine,$digest_rounds,$round"
            printf '%-7s %7s %4s %12.1f %10s %10s %8s\n' "$engine" "$digest_rounds" "$round" \
                "${rps[$key]}" "$(ms "${p50[$key]}")" "$(ms "${p99[$key]}")" "${failed[$key]}"
        done
    done
done

declare -A m_rps m_p50 m_p99 r_rps r_p50 r_p99
echo
printf 'Mean of %s run(s) per engine; %s digests per request, %s connections, %ss runs:\n' \
    "$ROUNDS" "$DIGESTS" "$CONNECTIONS" "$DURATION"
printf '%-14s %7s %12s %10s %10s\n' engine rounds "req/s" "p50 ms" "p99 ms"
for digest_rounds in $ROUNDS_LIST; do
    for engine in "${engines[@]}"; do
        a=() b=() c=()
        for ((round = 1; round <= ROUNDS; round++)); do
            key="$engine,$digest_rounds,$round"
            a+=("${rps[$key]}") b+=("${p50[$key]}") c+=("${p99[$key]}")
        done
        key="$engine,$digest_rounds"
        m_rps[$key]="$(mean "${a[@]}")" m_p50[$key]="$(mean "${b[@]}")" m_p99[$key]="$(mean "${c[@]}")"
        printf '%-14s %7s %12s %10s %10s\n' "$engine" "$digest_rounds" "${m_rps[$key]}" \
            "$(ms "${m_p50[$key]}")" "$(ms "${m_p99[$key]}")"
    done
    r_rps[$digest_rounds]="$(ratio "${m_rps[lather,$digest_rounds]}" "${m_rps[cxf,$digest_rounds]}")"
    r_p50[$digest_rounds]="$(ratio "${m_p50[lather,$digest_rounds]}" "${m_p50[cxf,$digest_rounds]}")"
    r_p99[$digest_rounds]="$(ratio "${m_p99[lather,$digest_rounds]}" "${m_p99[cxf,$digest_rounds]}")"
    printf '%-14s %7s %12s %10s %10s\n' "lather/CXF" "$digest_rounds" "${r_rps[$digest_rounds]}" \
        "${r_p50[$digest_rounds]}" "${r_p99[$digest_rounds]}"
done
echo "(req/s ratio above 1: lather serves more; latency ratio below 1: lather answers sooner)"

# --- the hashing bound: what SHA-256 alone allows on these cores ----------
echo
printf 'Hashing bound (lather-bench digest-bound: %s digests of the same request on every core, nothing else):\n' "$DIGESTS"
printf '%-7s %14s %14s %16s\n' rounds "bound req/s" "lather req/s" "lather / bound"
declare -A bound
for digest_rounds in $ROUNDS_LIST; do
    "$LATHER_BENCH" digest-bound --rounds "$digest_rounds" --handlers "$DIGESTS" \
        --payload-bytes "$PAYLOAD_BYTES" --seconds 5 >"$out_dir/bound-r$digest_rounds.txt" 2>&1 ||
        die "digest-bound failed; see $out_dir/bound-r$digest_rounds.txt"
    bound[$digest_rounds]="$(sed -n 's/.*at most \([0-9.]*\) requests\/s.*/\1/p' "$out_dir/bound-r$digest_rounds.txt")"
    printf '%-7s %14s %14s %16s\n' "$digest_rounds" "${bound[$digest_rounds]}" \
        "${m_rps[lather,$digest_rounds]}" "$(ratio "${m_rps[lather,$digest_rounds]}" "${bound[$digest_rounds]}")"
done

summary="$out_dir/summary.json"
{
    printf '{\n  "digests": %s,\n  "duration_s": %s,\n  "warmup_s": %s,\n  "warmup_cxf_s": %s,\n  "warmup_lather_s": %s,\n  "connections": %s,\n  "payload_bytes": %s,\n  "runs": [\n' \
        "$DIGESTS" "$DURATION" "$WARMUP" "$WARMUP_CXF" "$WARMUP_LATHER" "$CONNECTIONS" "$PAYLOAD_BYTES"
    sep=""
    for digest_rounds in $ROUNDS_LIST; do
        for ((round = 1; round <= ROUNDS; round++)); do
            for engine in "${engines[@]}"; do
                key="$engine,$digest_rounds,$round"
                printf '%s    {"engine": "%s", "rounds": %s, "run": %s, "rps": %s, "p50_us": %s, "p99_us": %s, "failed": %s, "report": "%s-r%s-%s.json"}' \
                    "$sep" "$engine" "$digest_rounds" "$round" "${rps[$key]}" "${p50[$key]}" \
                    "${p99[$key]}" "${failed[$key]}" "$engine" "$digest_rounds" "$round"
                sep=$',\n'
            done
        done
    done
    printf '\n  ],\n  "ratio_lather_over_cxf": ['
    sep=""
    for digest_rounds in $ROUNDS_LIST; do
        printf '%s\n    {"rounds": %s, "rps": %s, "p50": %s, "p99": %s}' "$sep" "$digest_rounds" \
            "$(json_ratio "${r_rps[$digest_rounds]}")" "$(json_ratio "${r_p50[$digest_rounds]}")" \
            "$(json_ratio "${r_p99[$digest_rounds]}")"
        sep=","
    done
    printf '\n  ]\n}\n'
} >"$summary"

echo
log "results in $out_dir"
