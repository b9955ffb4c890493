#!/usr/bin/env bash
# Throughput before vs after a change (issue 11's target: no regression from the redesign):
# two lather binaries, BEFORE and AFTER, each serving the same configs side by side, measured
# interleaved in one run with two generators.
#
# Cases (CASES, each served by one server per binary on its own free loopback port):
#   echo          the builtin echo service, no handlers
#   digest5       the same echo behind the five-digest chain: DIGESTS `digest` handlers of
#                 DIGEST_ROUNDS SHA-256 rounds (bench/digest-vs-cxf.sh's handler tables), one
#                 handler per stage (request = [["d1"], ["d2"], …]: five stages in a row)
#   gateway       a gateway service (/gateway) whose upstream is the same process's echo; the
#                 load goes to /gateway, so each request is two hops through lather
#   digest5-par   the same five handlers in one parallel stage (request = [["d1", …, "d5"]]),
#                 bench/digest-vs-cxf.sh's layout
#
# For each round r in 1..ROUNDS, for each case, for each generator, the two binaries run back
# to back — BEFORE first in odd rounds, AFTER first in even ones — and only one server is
# under load at a time:
#   wrk           `wrk -tWRK_THREADS -cCONNECTIONS -dDURATIONs` (Debian's wrk, a POST Lua
#                 script with lather-bench's built-in request) after a WARMUP-second wrk
#                 warm-up; the server's CPU (user + system, all threads) read from
#                 /proc/PID/stat around the measured run
#   lather-bench  `lather-bench http URL --connections C --duration D --warmup W
#                 --server-pid PID` (closed loop; CPU per request from its report)
#
# Prints a Markdown table per case and generator: req/s before and after (median of the
# rounds), after/before (median of the per-round ratios), server CPU µs per request before
# and after (medians), and whether the ratio meets TARGET; then the per-round numbers.
#
# Results: target/bench-results/redesign-regression-<timestamp>/ (configs, server logs, wrk
# outputs, generator reports, raw.tsv with every run, rounds.md, table.md, summary.json,
# meta.txt with the binaries' hashes and the load average before and after).
#
# Environment:
#   BEFORE                  the "before" lather binary (required)
#   AFTER=target/release/lather   the "after" lather binary
#   CASES="echo digest5"    cases to run (see above)
#   ROUNDS=5                interleaved rounds
#   DURATION=10             measured seconds per run
#   WARMUP=2                warm-up seconds before every measured run
#   CONNECTIONS=32          connections (both generators)
#   WRK_THREADS=2           wrk threads
#   DIGESTS=5 DIGEST_ROUNDS=10   digest handlers and their SHA-256 rounds
#   PAYLOAD_BYTES=100       size of the echoed text
#   BENCH_THREADS=1         lather-bench threads
#   TARGET=0.97             the after/before ratio that counts as no regression
#   SERVER_CPUS / CLIENT_CPUS  optional taskset CPU lists for servers / generators
#   LATHER_BENCH=target/release/lather-bench   BENCH_CMD   as in bench/lib.sh
#   SKIP_BUILD=1            do not build lather and lather-bench first
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

ROUNDS="${ROUNDS:-5}"
bench_defaults
AFTER="${AFTER:-$repo/target/release/lather}"
BEFORE="${BEFORE:-}"
CASES="${CASES:-echo digest5}"
WRK_THREADS="${WRK_THREADS:-2}"
DIGESTS="${DIGESTS:-5}"
DIGEST_ROUNDS="${DIGEST_ROUNDS:-10}"
TARGET="${TARGET:-0.97}"

[ -n "$BEFORE" ] || die "set BEFORE to the lather binary built before the change"
for n in "$ROUNDS" "$DIGESTS" "$DIGEST_ROUNDS" "$DURATION" "$WARMUP" "$CONNECTIONS"; do
    [[ "$n" =~ ^[0-9]+$ ]] || die "ROUNDS, DIGESTS, DIGEST_ROUNDS, DURATION, WARMUP and CONNECTIONS must be whole numbers, got '$n'"
done
[ "$ROUNDS" -ge 1 ] && [ "$DIGESTS" -ge 1 ] && [ "$DURATION" -ge 1 ] || die "ROUNDS, DIGESTS and DURATION must be at least 1"
for c in $CASES; do
    case "$c" in echo | gateway | digest5 | digest5-par) ;; *) die "unknown case '$c' (echo, gateway, digest5, digest5-par)" ;; esac
done
command -v wrk >/dev/null 2>&1 || die "wrk not found (apt-get install -y wrk)"
build_lather
[ -x "$AFTER" ] || die "AFTER: $AFTER not found"
[ -x "$BEFORE" ] || die "BEFORE: $BEFORE not found"
[ -n "${BENCH_CMD:-}" ] || [ -x "$LATHER_BENCH" ] ||
    die "$LATHER_BENCH not found (build lather-bench or set LATHER_BENCH)"
out_dir="$(results_dir redesign-regression)"
clk_tck="$(getconf CLK_TCK 2>/dev/null || echo 100)"

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "host: $(uname -srm), $(nproc) CPUs"
    echo "before: $BEFORE sha256 $(sha256sum "$BEFORE" | cut -c1-16)"
    echo "after: $AFTER sha256 $(sha256sum "$AFTER" | cut -c1-16)"
    echo "repository HEAD at the start (AFTER may be older or hold uncommitted changes): $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "after built: $(date -u -r "$AFTER" '+%Y-%m-%d %H:%M:%S UTC')"
    echo "knobs: CASES='$CASES' ROUNDS=$ROUNDS DURATION=$DURATION WARMUP=$WARMUP CONNECTIONS=$CONNECTIONS WRK_THREADS=$WRK_THREADS DIGESTS=$DIGESTS DIGEST_ROUNDS=$DIGEST_ROUNDS PAYLOAD_BYTES=$PAYLOAD_BYTES BENCH_THREADS=$BENCH_THREADS"
    echo "load before: $(cat /proc/loadavg)"
} >"$out_dir/meta.txt"
log "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

# --- servers --------------------------------------------------------------
# write_config FILE PORT CASE BINARY : the echo service, with the digest handlers for the
# digest cases.
write_config() {
    local file=$1 port=$2 kind=$3 binary=$4 stages="" i
    for ((i = 1; i <= DIGESTS; i++)); do
        case "$kind" in
        digest5) stages+="${stages:+, }[\"d$i\"]" ;;
        digest5-par) stages+="${stages:+, }\"d$i\"" ;;
        esac
    done
    [ "$kind" = digest5-par ] && stages="[$stages]"
    {
        # access_log = false (where the build knows it): a log line per request would slow
        # the measured server.
        printf '[server]\n%s\nlisten = "127.0.0.1:%s"\n\n' "$(access_log_off "$binary")" "$port"
        printf '[[service]]\nname = "echo"\npath = "/echo"\nbuiltin = "echo"\n'
        if [ "$kind" = gateway ]; then
            printf '\n[[service]]\nname = "gateway"\npath = "/gateway"\nupstream = ["http://127.0.0.1:%s/echo"]\n' "$port"
        elif [ "$kind" != echo ]; then
            printf 'request = [%s]\n' "$stages"
            for ((i = 1; i <= DIGESTS; i++)); do
                printf '\n[handlers.d%s]\nkind = "digest"\nrounds = %s\n' "$i" "$DIGEST_ROUNDS"
            done
        fi
    } >"$file"
}

declare -A bin=([before]="$BEFORE" [after]="$AFTER") url pid port
for c in $CASES; do
    for b in before after; do
        name="$b-$c"
        port[$name]="$(free_port)"
        config="$out_dir/$name.toml"
        write_config "$config" "${port[$name]}" "$c" "${bin[$b]}"
        "${bin[$b]}" check --config "$config" >"$out_dir/check-$name.txt" 2>&1 ||
            { cat "$out_dir/check-$name.txt" >&2; die "$name: lather check refused $config"; }
        start_bg "$out_dir/$name.log" "${bin[$b]}" serve --config "$config"
        pid[$name]=$bg_pid
        wait_for "$name" "${pid[$name]}" "$out_dir/$name.log" 10 health_ok "${port[$name]}"
        path=/echo
        [ "$c" = gateway ] && path=/gateway
        url[$name]="http://127.0.0.1:${port[$name]}$path"
        verify_echo "$name" "${url[$name]}" "$out_dir/probe-$name.json"
        log "$name: pid ${pid[$name]}, ${url[$name]}"
    done
done

# --- generators -----------------------------------------------------------
# The request: lather-bench's built-in SOAP 1.1 echo request (text a…z repeated), for wrk too.
body="$out_dir/request.xml"
{
    printf '<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><ns:echo xmlns:ns="urn:lather:echo"><text>'
    awk -v n="$PAYLOAD_BYTES" 'BEGIN { a = "abcdefghijklmnopqrstuvwxyz"; for (i = 0; i < n; i++) printf "%s", substr(a, i % 26 + 1, 1) }'
    printf '</text></ns:echo></soap:Body></soap:Envelope>'
} >"$body"
wrk_lua="$out_dir/post.lua"
cat >"$wrk_lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "text/xml; charset=utf-8"
wrk.headers["SOAPAction"] = '"urn:lather:echo#echo"'
local f = io.open("$body", "rb"); wrk.body = f:read("*a"); f:close()
LUA

# cpu_ticks PID : utime + stime of the process (all threads), in clock ticks.
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }

client() {
    if [ -n "${CLIENT_CPUS:-}" ]; then taskset -c "$CLIENT_CPUS" "$@"; else "$@"; fi
}

# Each run sets: r_rps r_cpu r_bad (failed or non-2xx answers) r_file.
run_wrk() { # NAME FILE
    local name=$1 file=$2 t0 t1 reqs non2xx errs
    if [ "$WARMUP" -gt 0 ]; then
        client wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${WARMUP}s" -s "$wrk_lua" "${url[$name]}" \
            >"$file.warmup" 2>&1
    fi
    t0="$(cpu_ticks "${pid[$name]}")"
    client wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$wrk_lua" \
        "${url[$name]}" >"$file" 2>&1
    t1="$(cpu_ticks "${pid[$name]}")"
    reqs="$(awk '/requests in/ { print $1 }' "$file")"
    [ -n "$reqs" ] && [ "$reqs" -gt 0 ] || { cat "$file" >&2; die "$name: wrk measured no requests"; }
    non2xx="$(awk '/Non-2xx or 3xx responses:/ { print $NF }' "$file")"
    errs="$(awk '/Socket errors:/ { gsub(/,/, ""); print $4 + $6 + $8 + $10 }' "$file")"
    r_bad=$((${non2xx:-0} + ${errs:-0}))
    r_rps="$(awk '/Requests\/sec/ { printf "%.1f", $2 }' "$file")"
    r_cpu="$(awk -v t=$((t1 - t0)) -v hz="$clk_tck" -v n="$reqs" 'BEGIN { printf "%.2f", t / hz * 1e6 / n }')"
}

run_lb() { # NAME FILE
    local name=$1 file=$2
    bench_cmd "${url[$name]}" --connections "$CONNECTIONS" --duration "$DURATION" \
        --warmup "$WARMUP" --server-pid "${pid[$name]}" --payload-bytes "$PAYLOAD_BYTES" \
        --threads "$BENCH_THREADS" --expect "urn:lather:echo" --quiet --json "$file" >/dev/null
    r_rps="$(json_num "$file" rps | xargs printf '%.1f')"
    r_cpu="$(json_num "$file" cpu_us_per_request | xargs printf '%.2f')"
    r_bad="$(json_num "$file" requests_failed)"
}

# --- the rounds -----------------------------------------------------------
raw="$out_dir/raw.tsv"
printf 'round\tcase\tgenerator\tbinary\tposition\treq_s\tcpu_us_per_req\tbad\tfile\n' >"$raw"
declare -A rps cpu bad
generators=(wrk lather-bench)
for ((round = 1; round <= ROUNDS; round++)); do
    if ((round % 2 == 1)); then order=(before after); else order=(after before); fi
    for c in $CASES; do
        for g in "${generators[@]}"; do
            pos=0
            for b in "${order[@]}"; do
                pos=$((pos + 1))
                name="$b-$c"
                log "round $round/$ROUNDS, $c, $g: $b (${DURATION}s after ${WARMUP}s warm-up, $CONNECTIONS connections)"
                case "$g" in
                wrk)
                    file="wrk-$name-$round.txt"
                    run_wrk "$name" "$out_dir/$file"
                    ;;
                lather-bench)
                    file="lb-$name-$round.json"
                    run_lb "$name" "$out_dir/$file"
                    ;;
                esac
                key="$round,$c,$g,$b"
                rps[$key]=$r_rps cpu[$key]=$r_cpu bad[$key]=$r_bad
                [ "$r_bad" = 0 ] || log "warning: $name: $r_bad failed or non-2xx answers in this run"
                log "  $r_rps req/s, $r_cpu µs CPU per request"
                printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$c" "$g" "$b" "$pos" \
                    "$r_rps" "$r_cpu" "$r_bad" "$file" >>"$raw"
            done
        done
    done
done

# The digest handlers ran (a check that the work was done): lather's /metrics per server.
for c in $CASES; do
    for b in before after; do
        name="$b-$c"
        curl -sS --max-time 5 "http://127.0.0.1:${port[$name]}/metrics" \
            >"$out_dir/metrics-$name.txt" 2>/dev/null || true
        if [ "$c" != echo ]; then
            log "$name: digest handler calls: $(sed -n \
                's/^lather_handler_calls_total{service="echo",handler="\([^"]*\)"} \([0-9]*\)$/\1=\2/p' \
                "$out_dir/metrics-$name.txt" 2>/dev/null | tr '\n' ' ')"
        fi
    done
done
echo "load after: $(cat /proc/loadavg)" >>"$out_dir/meta.txt"
stop_all

# --- summary --------------------------------------------------------------
# median X... : the median (the mean of the two middle values for an even count).
median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "-"; exit }
        if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.3f", m }'
}
fmt0() { awk -v x="$1" 'BEGIN { printf "%.0f", x }'; }
fmt1() { awk -v x="$1" 'BEGIN { printf "%.1f", x }'; }

table="$out_dir/table.md"
rounds_md="$out_dir/rounds.md"
summary="$out_dir/summary.json"
{
    echo "| case | generator | before req/s | after req/s | after/before | CPU µs/req before | CPU µs/req after | ≥ $TARGET× |"
    echo "|---|---|---:|---:|---:|---:|---:|---|"
} >"$table"
{
    echo "| round | case | generator | first | before req/s | after req/s | after/before | CPU µs/req before | CPU µs/req after | failed |"
    echo "|---:|---|---|---|---:|---:|---:|---:|---:|---:|"
} >"$rounds_md"
printf '{\n  "rounds": %s,\n  "duration_s": %s,\n  "warmup_s": %s,\n  "connections": %s,\n  "target": %s,\n  "results": [' \
    "$ROUNDS" "$DURATION" "$WARMUP" "$CONNECTIONS" "$TARGET" >"$summary"
sep=""
for c in $CASES; do
    for g in "${generators[@]}"; do
        rb=() ra=() rr=() cb=() ca=()
        for ((round = 1; round <= ROUNDS; round++)); do
            kb="$round,$c,$g,before" ka="$round,$c,$g,after"
            rb+=("${rps[$kb]}") ra+=("${rps[$ka]}") cb+=("${cpu[$kb]}") ca+=("${cpu[$ka]}")
            rr+=("$(ratio "${rps[$ka]}" "${rps[$kb]}")")
            if ((round % 2 == 1)); then first=before; else first=after; fi
            printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$round" "$c" "$g" "$first" \
                "$(fmt0 "${rps[$kb]}")" "$(fmt0 "${rps[$ka]}")" "${rr[-1]}" \
                "$(fmt1 "${cpu[$kb]}")" "$(fmt1 "${cpu[$ka]}")" "$((bad[$kb] + bad[$ka]))" >>"$rounds_md"
        done
        m_rb="$(median "${rb[@]}")" m_ra="$(median "${ra[@]}")" m_rr="$(median "${rr[@]}")"
        m_cb="$(median "${cb[@]}")" m_ca="$(median "${ca[@]}")"
        met="$(awk -v r="$m_rr" -v t="$TARGET" 'BEGIN { print (r + 0 >= t + 0) ? "met" : "not met" }')"
        printf '| %s | %s | %s | %s | **%.3f** | %s | %s | %s |\n' "$c" "$g" "$(fmt0 "$m_rb")" \
            "$(fmt0 "$m_ra")" "$m_rr" "$(fmt1 "$m_cb")" "$(fmt1 "$m_ca")" "$met" >>"$table"
        printf '%s\n    {"case": "%s", "generator": "%s", "before_rps": %s, "after_rps": %s, "ratio": %s, "before_cpu_us_per_req": %s, "after_cpu_us_per_req": %s, "met": %s, "per_round_ratios": [%s]}' \
            "$sep" "$c" "$g" "$m_rb" "$m_ra" "$m_rr" "$m_cb" "$m_ca" \
            "$([ "$met" = met ] && echo true || echo false)" "$(IFS=,; echo "${rr[*]}")" >>"$summary"
        sep=","
    done
done
printf '\n  ]\n}\n' >>"$summary"

echo
echo "Medians of $ROUNDS interleaved rounds (${DURATION}s runs after ${WARMUP}s warm-up, $CONNECTIONS connections; ratio = median of the per-round after/before ratios):"
echo
cat "$table"
echo
cat "$rounds_md"
echo
log "results in $out_dir"
