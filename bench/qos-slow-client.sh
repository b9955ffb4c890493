#!/usr/bin/env bash
# Load-adaptive compression seen from a slow client (WS-QoS; the seed's Figures 53/54 and
# Table 5, section 7.1.4.3, scaled to lather).
#
# lather (pinned to one core, SERVER_CPU) serves an echo whose answers are a "book
# information" record of ~BOOK_BYTES bytes of compressible XML text. On the other core
# (CLIENT_CPU) a background load, the seed's "sclient", sends requests at fixed offered
# rates (lather-bench open loop) in three modes:
#   all      every request says q:Compression required
#   none     every request says none
#   dynamic  half none, half server-decides (two generators at half the rate each)
# The rates are fractions (RATE_FRACTIONS) of lather's capacity with uncompressed answers,
# measured first (closed loop, CONNECTIONS connections; the capacity with compressed answers
# is measured too, about 0.55 of it): all-compressed saturates from about 0.6, and the top
# rate (1.15) passes the capacity in every mode. The clients' core must keep up: its busy
# share is reported (two generators in dynamic mode cost more than one).
# The machine must be otherwise idle: another process on lather's core keeps lather's own
# CPU share (what it decides by) low while the core is saturated, so server-decides answers
# go on being compressed. Processes of another run (lather, wrk, cargo, ...) are counted at
# each point and warned about.
# At the same time a "mobile client" with poor connectivity — one connection, one request
# at a time — sends MOBILE_COMPRESSION (server-decides) requests for a heavier record
# (~MOBILE_BOOK_BYTES) through `lather-bench delay-proxy` (MOBILE_KBPS each way, plus
# MOBILE_DELAY_MS each way); its request body is sent gzip-compressed (Content-Encoding:
# gzip), so the link's time goes to the answer, which lather compresses only while its CPU
# share over the last second is below compress_below_cpu. Its median service time per
# request is Table 5's entry.
#
# Each point: WARMUP s of load, then a measured window of ~DURATION s read while the load
# runs. For each rate and mode: background throughput served (lather's answers in the
# window, less the mobile client's), its latency (p50, p99; from each request's scheduled
# send time, so queueing is counted), the share of server-decides answers compressed
# (/metrics: lather_responses_compressed_total and lather_responses_plain_for_load_total),
# lather's CPU µs per request, lather_cpu_percent at the end of the window, the busy share
# of both cores, and the mobile client's median and p90 service time and how many of its
# answers came compressed (from the bytes it received, against idle runs with compression
# required and refused).
#
# Environment: BOOK_BYTES=8000 MOBILE_BOOK_BYTES=16000 WARMUP=2 DURATION=10 CONNECTIONS=32
#              CAPACITY_SECS=6 RATE_FRACTIONS="0.15 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1.0 1.15"
#              RATES="" (absolute req/s, overrides RATE_FRACTIONS) MOBILE_KBPS=512
#              MOBILE_DELAY_MS=40 MOBILE_COMPRESSION=server-decides COMPRESS_BELOW_CPU=80
#              SETTLE=2 SERVER_CPU=1 CLIENT_CPU=0 SKIP_BUILD=1 (use the built binaries)
# Results: target/bench-results/qos-slow-client-<timestamp>/ (config, bodies, one JSON
# report per generator run, points.tsv, table.md, run.log, chart.svg when python3 is there).
# About 8–9 minutes with the defaults.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh"

BOOK_BYTES="${BOOK_BYTES:-8000}"
MOBILE_BOOK_BYTES="${MOBILE_BOOK_BYTES:-16000}"
DURATION="${DURATION:-10}"
WARMUP="${WARMUP:-2}"
CONNECTIONS="${CONNECTIONS:-32}"
CAPACITY_SECS="${CAPACITY_SECS:-6}"
RATE_FRACTIONS="${RATE_FRACTIONS:-0.15 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1.0 1.15}"
RATES="${RATES:-}"
MOBILE_KBPS="${MOBILE_KBPS:-512}"
MOBILE_DELAY_MS="${MOBILE_DELAY_MS:-40}"
MOBILE_COMPRESSION="${MOBILE_COMPRESSION:-server-decides}"
COMPRESS_BELOW_CPU="${COMPRESS_BELOW_CPU:-80}"
SETTLE="${SETTLE:-2}"
SERVER_CPU="${SERVER_CPU:-1}"
CLIENT_CPU="${CLIENT_CPU:-0}"
LATHER="${LATHER:-$repo/target/release/lather}"
LATHER_BENCH="${LATHER_BENCH:-$repo/target/release/lather-bench}"
command -v taskset >/dev/null 2>&1 || die "taskset not found (util-linux)"
command -v gzip >/dev/null 2>&1 || die "gzip not found"
[ "$(nproc)" -ge 2 ] || die "needs two cores (lather on one, the clients on the other)"
[ "$DURATION" -ge 4 ] || die "DURATION must be at least 4 (seconds)"
case "$MOBILE_COMPRESSION" in none | required | server-decides) ;; *) die "MOBILE_COMPRESSION: none, required or server-decides" ;; esac

build_lather
[ -x "$LATHER" ] || die "$LATHER not found"
[ -x "$LATHER_BENCH" ] || die "$LATHER_BENCH not found"
out="$(results_dir qos-slow-client)"
# The progress log goes to run.log as well.
exec 2> >(tee -a "$out/run.log" >&2)
log "results in $out"
started=$(date +%s)

# --- processes -------------------------------------------------------------------------
# Generators are started with start_bg (so the EXIT trap stops them by PID) and bounded by
# timeout(1) as well; once waited for, they leave bench_pids.
forget_pid() {
    local p keep=()
    for p in "${bench_pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
    bench_pids=("${keep[@]}")
}
wait_bg() {
    local rc=0
    wait "$1" || rc=$?
    forget_pid "$1"
    return "$rc"
}
# The longest a generator may take: its duration, the drain of its backlog (requests time
# out after 10 s) and some slack.
gen_limit=$((WARMUP + DURATION + 45))

# --- server ------------------------------------------------------------------------------
port="$(free_port)"
cat >"$out/lather.toml" <<TOML
[server]
# Off while measuring throughput: a log line per request costs more than an echo.
access_log = false
listen = "127.0.0.1:$port"
max_in_flight = 4096
queue_capacity = 4096
compress_responses = true

[qos]
compress_below_cpu = $COMPRESS_BELOW_CPU

[[service]]
name = "echo"
path = "/echo"
builtin = "echo"
TOML
start_bg "$out/lather.log" taskset -c "$SERVER_CPU" "$LATHER" --log-level warn serve --config "$out/lather.toml"
pid=$bg_pid
wait_for lather "$pid" "$out/lather.log" 20 health_ok "$port"
url="http://127.0.0.1:$port/echo"

# The mobile client's link.
proxy_port="$(free_port)"
start_bg "$out/delay-proxy.log" taskset -c "$CLIENT_CPU" "$LATHER_BENCH" delay-proxy \
    --listen "127.0.0.1:$proxy_port" --to "127.0.0.1:$port" \
    --delay-us $((MOBILE_DELAY_MS * 1000)) --rate-kbps "$MOBILE_KBPS" --coarse --quiet
proxy_pid=$bg_pid
wait_for delay-proxy "$proxy_pid" "$out/delay-proxy.log" 10 port_open "$proxy_port"
mobile_url="http://127.0.0.1:$proxy_port/echo"

# --- bodies ------------------------------------------------------------------------------
# book TARGET SEED: a deterministic "book information" record of about TARGET bytes
# (title, authors, publisher, subjects, description and reader reviews in generated
# English-like text; gzip -1 shrinks it about 2.5–3×).
book() {
    awk -v TARGET="$1" -v SEED="$2" '
    function rnd() { seed = (seed * 16807) % 2147483647; return seed / 2147483647 }
    function pick(arr, n) { return arr[int(rnd() * n) + 1] }
    function sentence(minw, maxw,   k, s, i) {
        k = minw + int(rnd() * (maxw - minw + 1)); s = pick(W, nw)
        s = toupper(substr(s, 1, 1)) substr(s, 2)
        for (i = 2; i <= k; i++) s = s " " pick(W, nw)
        return s "."
    }
    BEGIN {
        nw = split("the a of and to in is was that for on with as by at from his her their this which story novel author reader chapter character journey city river winter summer war peace family memory history light dark voice world life death love time years night morning letter house garden sea mountain road village king queen child father mother friend stranger secret truth silence music painting language book library island ship train letters dream fear hope loss return exile home small old young long quiet bright strange careful patient brilliant moving slow gentle bitter honest vivid subtle written told found lost remembered built crossed wrote read heard saw kept left followed carried opened closed", W, " ")
        nn = split("Anna Marek Lucia Tomas Ingrid Pavel Sofia Henrik Clara Jonas Elena Viktor Maria Pieter Helga Aksel Irene Oskar Nadia Felix", N, " ")
        ns = split("Lindqvist Novak Moreau Haugen Costa Berg Kowalski Jensen Romano Dahl Varga Nilsen Weber Santos Brandt Olsen Fischer Horvath Larsen Meyer", S, " ")
        seed = SEED + 0
        printf "<book xmlns=\"urn:example:books\" isbn=\"978-82-%05d-%03d-%d\">", int(rnd() * 99999), int(rnd() * 999), int(rnd() * 9)
        printf "<title>%s</title><subtitle>%s</subtitle>", sentence(2, 5), sentence(4, 8)
        printf "<authors><author><given>%s</given><family>%s</family></author><author><given>%s</given><family>%s</family></author></authors>", pick(N, nn), pick(S, ns), pick(N, nn), pick(S, ns)
        printf "<publisher>%s %s Forlag</publisher><published>%d-%02d-%02d</published><pages>%d</pages><language>en</language><price currency=\"NOK\">%d.%02d</price>", pick(S, ns), pick(S, ns), 1950 + int(rnd() * 75), 1 + int(rnd() * 12), 1 + int(rnd() * 28), 120 + int(rnd() * 700), 99 + int(rnd() * 400), int(rnd() * 100)
        printf "<subjects><subject>%s</subject><subject>%s</subject><subject>%s</subject></subjects>", pick(W, nw), pick(W, nw), pick(W, nw)
        out = 0
        printf "<description>"
        for (i = 0; i < 3; i++) { s = sentence(8, 20); printf "%s ", s; out += length(s) + 1 }
        printf "</description><reviews>"
        r = 0
        while (out + 700 < TARGET) {
            r++
            line = sprintf("<review id=\"r%d\" rating=\"%d\"><reviewer>%s %s</reviewer><date>%d-%02d-%02d</date><text>", r, 1 + int(rnd() * 5), pick(N, nn), pick(S, ns), 2000 + int(rnd() * 26), 1 + int(rnd() * 12), 1 + int(rnd() * 28))
            k = 2 + int(rnd() * 4)
            for (j = 0; j < k; j++) line = line sentence(6, 18) " "
            line = line "</text></review>"
            printf "%s", line; out += length(line)
        }
        printf "</reviews><availability><store id=\"oslo-1\">%d</store><store id=\"bergen-2\">%d</store><store id=\"online\">%d</store></availability></book>", int(rnd() * 20), int(rnd() * 20), int(rnd() * 200)
    }'
}
envelope() { # PREFERENCE RECORD-FILE
    printf '<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Header><q:QoS xmlns:q="urn:lather:qos"><q:Compression>%s</q:Compression></q:QoS></soap:Header><soap:Body><ns:echo xmlns:ns="urn:lather:echo">%s</ns:echo></soap:Body></soap:Envelope>' \
        "$1" "$(cat "$2")"
}
book "$BOOK_BYTES" 7 >"$out/book-lite.xml"
book "$MOBILE_BOOK_BYTES" 11 >"$out/book-heavy.xml"
for pref in required none server-decides; do
    envelope "$pref" "$out/book-lite.xml" >"$out/body-$pref.xml"
    envelope "$pref" "$out/book-heavy.xml" >"$out/mobile-$pref.xml"
    gzip -9 -n -c "$out/mobile-$pref.xml" >"$out/mobile-$pref.xml.gz"
done
lite_plain=$(wc -c <"$out/body-none.xml")
lite_gz=$(gzip -1 -n -c "$out/body-none.xml" | wc -c)
heavy_plain=$(wc -c <"$out/mobile-none.xml")
heavy_gz=$(gzip -1 -n -c "$out/mobile-none.xml" | wc -c)
log "background envelope $lite_plain bytes (gzip -1: $lite_gz); mobile envelope $heavy_plain bytes (gzip -1: $heavy_gz), sent as $(wc -c <"$out/mobile-$MOBILE_COMPRESSION.xml.gz") gzip bytes"

# --- checks: the preferences do what they say --------------------------------------------
if command -v curl >/dev/null 2>&1; then
    for pref in required none server-decides; do
        curl -sS -o "$out/check-$pref.body" -D "$out/check-$pref.head" -H 'Content-Type: text/xml; charset=utf-8' \
            -H 'SOAPAction: "urn:lather:echo#echo"' -H 'Accept-Encoding: gzip' \
            --data-binary @"$out/body-$pref.xml" "$url" || die "curl to $url failed"
        grep -q '^HTTP/1.1 200' "$out/check-$pref.head" || die "$pref: not a 200 (see $out/check-$pref.head)"
        enc=$(tr -d '\r' <"$out/check-$pref.head" | awk -F': ' 'tolower($1) == "content-encoding" {print $2}')
        log "check: $pref -> Content-Encoding '${enc:-identity}', $(wc -c <"$out/check-$pref.body") bytes"
        case "$pref" in
            required | server-decides) [ "$enc" = gzip ] || die "$pref on an idle server should come back gzip-compressed" ;;
            none) [ -z "$enc" ] || die "none should come back plain" ;;
        esac
    done
    gzip -dc "$out/check-required.body" | grep -q 'urn:example:books' || die "the compressed answer does not hold the book"
    curl -sS -o /dev/null -D "$out/check-mobile.head" -H 'Content-Type: text/xml; charset=utf-8' \
        -H 'SOAPAction: "urn:lather:echo#echo"' -H 'Accept-Encoding: gzip' -H 'Content-Encoding: gzip' \
        --data-binary @"$out/mobile-$MOBILE_COMPRESSION.xml.gz" "$mobile_url" || die "curl through the delay proxy failed"
    grep -q '^HTTP/1.1 200' "$out/check-mobile.head" || die "mobile request through the proxy: not a 200"
else
    log "curl not found: skipping the Content-Encoding checks"
fi

# lather-bench http on the client core, bounded in time; started with start_bg, so the PID
# kept is timeout's, which passes SIGTERM on to lather-bench.
bench_argv=(taskset -c "$CLIENT_CPU" timeout -k 5 "$gen_limit" "$LATHER_BENCH" http)
hz=$(getconf CLK_TCK)
# metrics PORT : "compressed plain_for_load echo_requests" from one read of /metrics.
metrics() {
    # shellcheck disable=SC2016 # expanded by the inner bash
    timeout 5 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$0" || exit 1
        printf "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n" "$0" >&3
        cat <&3' "$1" | tr -d '\r' | awk '
        index($0, "lather_responses_compressed_total ") == 1 {c = $NF}
        index($0, "lather_responses_plain_for_load_total ") == 1 {p = $NF}
        index($0, "lather_requests_total{service=\"echo\",") == 1 {r += $NF}
        END {print c + 0, p + 0, r + 0}'
}
now() { date +%s.%N; }
# core_jiffies CPU : "busy total" jiffies of one CPU from /proc/stat (busy: all but idle
# and iowait; softirq counted, which lather's own ticks leave out).
core_jiffies() { awk -v c="cpu$1" '$1 == c {t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t}' /proc/stat; }
busy_share() { # BEFORE AFTER (each "busy total")
    awk -v a="$1" -v b="$2" 'BEGIN {split(a, x, " "); split(b, y, " "); d = y[2] - x[2]; if (d <= 0) print "-"; else printf "%.2f", (y[1] - x[1]) / d}'
}
# foreign_load : how many benchmark-like processes (lather, lather-bench, wrk, cargo, rustc,
# python3) run outside this script's process groups (its own, and those of the timeout(1)
# processes it started, each a group of its own) — another run sharing the cores.
my_pgid=$(ps -o pgid= -p $$ | tr -d ' ')
foreign_load() {
    ps -eo pgid=,comm= | awk -v mine="$my_pgid ${bench_pids[*]}" '
        BEGIN {n = split(mine, m, " "); for (i = 1; i <= n; i++) own[m[i]] = 1}
        !($1 in own) && $2 ~ /^(lather|lather-bench|wrk|cargo|rustc|python3)$/' | wc -l
}
n=$(foreign_load)
[ "$n" -eq 0 ] || log "warning: $n benchmark-like processes of another run are on this machine; figures may be disturbed"

# --- capacity ----------------------------------------------------------------------------
declare -A cap
for pref in none required; do
    sleep "$SETTLE"
    log "capacity with answers $pref (closed loop, $CONNECTIONS connections, ${CAPACITY_SECS}s)"
    start_bg "$out/capacity-$pref.log" "${bench_argv[@]}" "$url" --connections "$CONNECTIONS" \
        --duration "$CAPACITY_SECS" --warmup 1 --body "$out/body-$pref.xml" --header "Accept-Encoding: gzip" \
        --server-pid "$pid" --quiet --json "$out/capacity-$pref.json"
    wait_bg "$bg_pid" || die "the capacity run failed (see $out/capacity-$pref.log)"
    cap[$pref]=$(json_num "$out/capacity-$pref.json" rps)
    log "  $(printf '%.0f' "${cap[$pref]}") req/s, $(json_num "$out/capacity-$pref.json" cpu_us_per_request) µs CPU/request"
    n=$(foreign_load)
    [ "$n" -eq 0 ] || log "  warning: $n processes of another run were on the machine: the capacity, and the rates drawn from it, may be low"
done
if [ -z "$RATES" ]; then
    for f in $RATE_FRACTIONS; do
        RATES="$RATES $(awk -v f="$f" -v c="${cap[none]}" 'BEGIN {r = int(f * c / 100 + 0.5) * 100; if (r < 100) r = 100; print r}')"
    done
fi
log "offered rates:$RATES"

# --- the mobile client alone (reference) -------------------------------------------------
# mobile_start JSON SECONDS PREFERENCE : starts the mobile client's run in the background
# (its PID in $bg_pid; waited for with wait_bg, so that a signal to this script is handled
# at once).
mobile_start() {
    start_bg "${1%.json}.log" taskset -c "$CLIENT_CPU" timeout -k 5 $(($2 + 70)) "$LATHER_BENCH" http \
        "$mobile_url" --connections 1 --duration "$2" --body "$out/mobile-$3.xml.gz" \
        --header "Content-Encoding: gzip" --header "Accept-Encoding: gzip" --timeout-ms 60000 \
        --quiet --json "$1"
}
mobile() { mobile_start "$@" && wait_bg "$bg_pid"; }
per_answer() { awk -v b="$(json_num "$1" bytes_received)" -v n="$(json_num "$1" requests_ok)" 'BEGIN {printf "%.0f", (n > 0) ? b / n : 0}'; }
ms() { awk -v u="$1" 'BEGIN {printf (u >= 100000) ? "%.0f" : "%.1f", u / 1000}'; }
declare -A idle_bytes idle_p50
for pref in required none; do
    sleep "$SETTLE"
    mobile "$out/mobile-idle-$pref.json" 8 "$pref"
    idle_bytes[$pref]=$(per_answer "$out/mobile-idle-$pref.json")
    idle_p50[$pref]=$(json_num "$out/mobile-idle-$pref.json" p50)
    log "mobile client alone, $pref: $(json_num "$out/mobile-idle-$pref.json" requests_ok) requests, p50 $(ms "${idle_p50[$pref]}") ms, ${idle_bytes[$pref]} bytes received per answer"
done
awk -v a="${idle_bytes[none]}" -v b="${idle_bytes[required]}" 'BEGIN {exit !(a > b * 1.3)}' ||
    die "the mobile client's plain and compressed answers do not differ in size (${idle_bytes[none]} vs ${idle_bytes[required]} bytes)"

# --- the runs ------------------------------------------------------------------------------
printf 'rate\tmode\tserved_rps\twindow_s\tgen_rps\tbg_ok\tbg_failed\tbg_dropped\tbg_late\tp50_us\tp99_us\tp50_none_half_us\tp99_none_half_us\tp50_sd_half_us\tp99_sd_half_us\tcompressed\tplain_for_load\tanswers\tsd_share_compressed\tall_share_compressed\tcpu_us_per_req\tcpu_percent\tmobile_ok\tmobile_p50_us\tmobile_p90_us\tmobile_bytes_per_answer\tmobile_share_compressed\tserver_core_busy\tclient_core_busy\tforeign_procs\n' >"$out/points.tsv"
modes="all none dynamic"
total_points=$(($(echo "$RATES" | wc -w) * 3))
done_points=0
for rate in $RATES; do
    for mode in $modes; do
        done_points=$((done_points + 1))
        sleep "$SETTLE"
        tag="$rate-$mode"
        log "[$done_points/$total_points] $rate req/s offered, $mode"
        gens=()
        if [ "$mode" = dynamic ]; then
            half=$(awk -v r="$rate" 'BEGIN {print r / 2}')
            hc=$(((CONNECTIONS + 1) / 2))
            for pref in none server-decides; do
                start_bg "$out/gen-$tag-$pref.log" "${bench_argv[@]}" "$url" --rate "$half" --warmup "$WARMUP" \
                    --duration "$DURATION" --connections "$hc" --body "$out/body-$pref.xml" \
                    --header "Accept-Encoding: gzip" --quiet --json "$out/gen-$tag-$pref.json"
                gens+=("$bg_pid")
            done
        else
            pref=required
            if [ "$mode" = none ]; then pref=none; fi
            start_bg "$out/gen-$tag-$pref.log" "${bench_argv[@]}" "$url" --rate "$rate" --warmup "$WARMUP" \
                --duration "$DURATION" --connections "$CONNECTIONS" --body "$out/body-$pref.xml" \
                --header "Accept-Encoding: gzip" --quiet --json "$out/gen-$tag-$pref.json"
            gens+=("$bg_pid")
        fi
        # The measured window: from the end of the generators' warm-up (the CPU reading lather
        # decides by covers the last second, so the first second after a pause is not the
        # steady state) to just before they stop sending; the server's figures (answers,
        # compression counters, CPU, core busy) come from this window, read while the load
        # runs. The mobile client runs in it.
        sleep "$WARMUP"
        w0=$(now)
        read -r c0 p0 r0 < <(metrics "$port")
        t0=$(cpu_ticks "$pid")
        s0=$(core_jiffies "$SERVER_CPU")
        k0=$(core_jiffies "$CLIENT_CPU")
        foreign=$(foreign_load)
        mobile_start "$out/mobile-$tag.json" $((DURATION - 1)) "$MOBILE_COMPRESSION"
        mob=$bg_pid
        sleep "$(awk -v w0="$w0" -v now="$(now)" -v d="$DURATION" 'BEGIN {s = w0 + d - 0.3 - now; print (s > 0) ? s : 0}')"
        read -r c1 p1 r1 < <(metrics "$port")
        t1=$(cpu_ticks "$pid")
        s1=$(core_jiffies "$SERVER_CPU")
        k1=$(core_jiffies "$CLIENT_CPU")
        w1=$(now)
        load=$(metric_value "$port" lather_cpu_percent)
        n=$(foreign_load)
        if [ "$n" -gt "$foreign" ]; then foreign=$n; fi
        wait_bg "$mob" || log "warning: the mobile client failed ($tag; see $out/mobile-$tag.log)"
        for g in "${gens[@]}"; do
            wait_bg "$g" || log "warning: a generator exited non-zero ($tag; see $out/gen-$tag-*.log)"
        done

        # Background figures from the generator(s): requests, failures, latency (the worse
        # half in dynamic mode; each half's own in points.tsv).
        gen_rps=0 ok=0 failed=0 dropped=0 late=0 p50=0 p99=0
        declare -A hp50=([none]=- [server-decides]=-) hp99=([none]=- [server-decides]=-)
        for f in "$out"/gen-"$tag"-*.json; do
            [ -s "$f" ] || die "no report from a generator ($f)"
            pref=${f#"$out/gen-$tag-"}
            pref=${pref%.json}
            gen_rps=$(awk -v a="$gen_rps" -v b="$(json_num "$f" rps)" 'BEGIN {printf "%.0f", a + b}')
            ok=$((ok + $(json_num "$f" requests_ok)))
            failed=$((failed + $(json_num "$f" requests_failed)))
            dropped=$((dropped + $(json_num "$f" dropped_by_generator)))
            late=$((late + $(json_num "$f" sent_late)))
            fp50=$(json_num "$f" p50)
            fp99=$(json_num "$f" p99)
            if [ "$fp50" -gt "$p50" ]; then p50=$fp50; fi
            if [ "$fp99" -gt "$p99" ]; then p99=$fp99; fi
            if [ "$mode" = dynamic ]; then hp50[$pref]=$fp50 hp99[$pref]=$fp99; fi
        done
        mok=0 mp50=0 mp90=0 mbytes=0 mshare=-
        if [ -s "$out/mobile-$tag.json" ]; then
            mok=$(json_num "$out/mobile-$tag.json" requests_ok)
            mp50=$(json_num "$out/mobile-$tag.json" p50)
            mp90=$(json_num "$out/mobile-$tag.json" p90)
            mbytes=$(per_answer "$out/mobile-$tag.json")
            mshare=$(awk -v m="$mbytes" -v p="${idle_bytes[none]}" -v g="${idle_bytes[required]}" \
                'BEGIN {s = (p - m) / (p - g); if (s < 0) s = 0; if (s > 1) s = 1; printf "%.2f", s}')
        fi
        dc=$((c1 - c0))
        dp=$((p1 - p0))
        dr=$((r1 - r0))
        window=$(awk -v a="$w0" -v b="$w1" 'BEGIN {printf "%.3f", b - a}')
        # Served background throughput: lather's answers in the window, less the mobile
        # client's (a few a second).
        served=$(awk -v r="$dr" -v m="$mok" -v w="$window" 'BEGIN {printf "%.0f", (r - m) / w}')
        # Share of server-decides answers compressed: from the counters, except in all mode,
        # where the compressed ones are mostly required ones and the only server-decides
        # answers are the mobile client's (share from the bytes it received).
        if [ "$mode" = all ]; then
            sd_share=$mshare
        else
            sd_share=$(awk -v c="$dc" -v p="$dp" 'BEGIN {if (c + p == 0) print "-"; else printf "%.3f", c / (c + p)}')
        fi
        all_share=$(awk -v c="$dc" -v n="$dr" 'BEGIN {if (n == 0) print "-"; else printf "%.3f", c / n}')
        cpu=$(awk -v t=$((t1 - t0)) -v hz="$hz" -v n="$dr" 'BEGIN {if (n == 0) print "-"; else printf "%.1f", t / hz * 1e6 / n}')
        server_busy=$(busy_share "$s0" "$s1")
        client_busy=$(busy_share "$k0" "$k1")
        printf '%s\t' "$rate" "$mode" "$served" "$window" "$gen_rps" "$ok" "$failed" "$dropped" "$late" "$p50" "$p99" \
            "${hp50[none]}" "${hp99[none]}" "${hp50[server-decides]}" "${hp99[server-decides]}" \
            "$dc" "$dp" "$dr" "$sd_share" "$all_share" "$cpu" "$load" "$mok" "$mp50" "$mp90" "$mbytes" "$mshare" \
            "$server_busy" "$client_busy" >>"$out/points.tsv"
        printf '%s\n' "$foreign" >>"$out/points.tsv"
        log "  served $served/s, p50 $(ms "$p50") ms, p99 $(ms "$p99") ms, failed $failed, dropped $dropped; compressed $dc, plain for load $dp of $dr (server-decides compressed: $sd_share); ${cpu} µs CPU/request, cpu_percent $load; mobile p50 $(ms "$mp50") ms, $mbytes bytes/answer (compressed ≈ $mshare); cores busy: server $server_busy, clients $client_busy"
        [ "$foreign" -eq 0 ] || log "  warning: $foreign processes of another run were on the machine during this point"
        [ "$failed" -eq 0 ] || log "  warning: $failed background requests failed (see $out/gen-$tag-*.json)"
        if [ "$mode" = all ] && [ $((dc * 100)) -lt $((dr * 95)) ]; then
            log "  warning: fewer answers compressed ($dc) than answers ($dr) in all mode"
        fi
        if [ "$mode" = none ] && [ "$dc" -gt "$mok" ]; then
            log "  warning: more answers compressed ($dc) than the mobile client's ($mok) in none mode"
        fi
    done
done

# --- tables ------------------------------------------------------------------------------
col() { awk -F'\t' -v r="$1" -v m="$2" -v c="$3" 'NR == 1 {for (i = 1; i <= NF; i++) k[$i] = i; next} $1 == r && $2 == m {print $k[c]}' "$out/points.tsv"; }
{
    echo "lather echo pinned to CPU $SERVER_CPU, background answers ~${lite_plain} bytes (gzip -1: ${lite_gz}), compress_below_cpu = $COMPRESS_BELOW_CPU;"
    echo "background load: lather-bench open loop on CPU $CLIENT_CPU, $CONNECTIONS connections, ${WARMUP} s warm-up then ${DURATION} s measured per point (dynamic: two generators at half the rate, $(((CONNECTIONS + 1) / 2)) connections each);"
    echo "capacity (closed loop, $CONNECTIONS connections): $(printf '%.0f' "${cap[none]}") req/s uncompressed, $(printf '%.0f' "${cap[required]}") req/s compressed;"
    echo "mobile client: one connection, sequential $MOBILE_COMPRESSION requests, ${heavy_plain}-byte answers (gzip -1: ${heavy_gz}), request body gzip-compressed, through delay-proxy at $MOBILE_KBPS kbit/s and $MOBILE_DELAY_MS ms each way;"
    echo "mobile client alone on an idle server: $(ms "${idle_p50[required]}") ms with compressed answers (required), $(ms "${idle_p50[none]}") ms with plain ones (none)."
    echo
    echo "### Throughput (Figure 54): served background requests/s (lather's answers over the measured window, less the mobile client's)"
    echo
    echo "| offered req/s | all compressed | none compressed | dynamic | dynamic ÷ none | all ÷ none |"
    echo "|---:|---:|---:|---:|---:|---:|"
    for rate in $RATES; do
        a=$(col "$rate" all served_rps) n=$(col "$rate" none served_rps) d=$(col "$rate" dynamic served_rps)
        printf '| %s | %s | %s | %s | %s | %s |\n' "$rate" "$a" "$n" "$d" "$(ratio "$d" "$n")" "$(ratio "$a" "$n")"
    done
    echo
    echo "### Response time (Figure 53): background latency p50 / p99, ms (from the scheduled send time)"
    echo
    echo "| offered req/s | all compressed | none compressed | dynamic (worse half) |"
    echo "|---:|---:|---:|---:|"
    for rate in $RATES; do
        row="| $rate |"
        for mode in $modes; do row="$row $(ms "$(col "$rate" "$mode" p50_us)") / $(ms "$(col "$rate" "$mode" p99_us)") |"; done
        echo "$row"
    done
    echo
    echo "### Load-adaptive decisions and cost"
    echo
    echo "Over the measured part of each point (after the warm-up): share of server-decides answers compressed (dynamic: the background half and the mobile client, from the counters; none: the mobile client's, from the counters; all: the mobile client's, estimated from the bytes it received), share of all answers compressed, lather's CPU µs per request (its own threads; softirq excluded), lather_cpu_percent read at the end of the window, busy share of the server's and the clients' core (softirq included), background requests failed / dropped by the generator (backlog full):"
    echo
    echo "| offered req/s | mode | server-decides compressed | all answers compressed | CPU µs/request | cpu_percent | server / client core busy | background failed / dropped |"
    echo "|---:|---|---:|---:|---:|---:|---:|---:|"
    for rate in $RATES; do
        for mode in $modes; do
            printf '| %s | %s | %s | %s | %s | %s | %s / %s | %s / %s |\n' "$rate" "$mode" "$(col "$rate" "$mode" sd_share_compressed)" \
                "$(col "$rate" "$mode" all_share_compressed)" "$(col "$rate" "$mode" cpu_us_per_req)" \
                "$(col "$rate" "$mode" cpu_percent)" "$(col "$rate" "$mode" server_core_busy)" "$(col "$rate" "$mode" client_core_busy)" \
                "$(col "$rate" "$mode" bg_failed)" "$(col "$rate" "$mode" bg_dropped)"
        done
    done
    echo
    echo "### Mobile client (Table 5): median service time, ms (share of its answers compressed)"
    echo
    echo "| background req/s | all compressed | dynamic | none compressed (reference) |"
    echo "|---:|---:|---:|---:|"
    for rate in $RATES; do
        row="| $rate |"
        for mode in all dynamic none; do row="$row $(ms "$(col "$rate" "$mode" mobile_p50_us)") ($(col "$rate" "$mode" mobile_share_compressed)) |"; done
        echo "$row"
    done
} >"$out/table.md"

# --- chart -------------------------------------------------------------------------------
if command -v python3 >/dev/null 2>&1; then
    python3 - "$out/points.tsv" "$out/chart.svg" <<'PY' || log "warning: the chart was not drawn"
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
rates = sorted({int(r["rate"]) for r in rows})
modes = [("all", "#d62728", "all compressed"), ("none", "#1f77b4", "none compressed"), ("dynamic", "#2ca02c", "dynamic")]
def val(rate, mode, key):
    for r in rows:
        if int(r["rate"]) == rate and r["mode"] == mode:
            try:
                return float(r[key])
            except ValueError:
                return None
    return None
W, H, L, T, PW, PH, GAP = 1200, 420, 70, 40, 300, 300, 90
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
       '<rect width="100%" height="100%" fill="white"/>']
panels = [
    ("Throughput (Fig. 54): served req/s", "served_rps", False, 1.0),
    ("Response time (Fig. 53): p50 ms, log", "p50_us", True, 1e-3),
    ("Mobile client (Table 5): p50 ms", "mobile_p50_us", False, 1e-3),
]
xmax = max(rates) * 1.05
for i, (title, key, logy, scale) in enumerate(panels):
    x0 = L + i * (PW + GAP)
    vals = [v * scale for m, _, _ in modes for r in rates if (v := val(r, m, key)) is not None and v > 0]
    if not vals:
        continue
    if logy:
        lo, hi = math.floor(math.log10(min(vals))), math.ceil(math.log10(max(vals)))
        hi = max(hi, lo + 1)
        ys = lambda v: T + PH - (math.log10(max(v, 10 ** lo)) - lo) / (hi - lo) * PH
        ticks = [10 ** e for e in range(lo, hi + 1)]
    else:
        top = max(vals) * 1.1
        ys = lambda v, top=top: T + PH - v / top * PH
        step = 10 ** math.floor(math.log10(top / 4))
        for mult in (1, 2, 5, 10):
            if top / (step * mult) <= 6:
                step *= mult
                break
        ticks = [k * step for k in range(int(top / step) + 1)]
    xs = lambda v: x0 + v / xmax * PW
    svg.append(f'<text x="{x0}" y="{T - 12}" font-weight="bold">{title}</text>')
    svg.append(f'<rect x="{x0}" y="{T}" width="{PW}" height="{PH}" fill="none" stroke="#888"/>')
    for t in ticks:
        y = ys(t)
        svg.append(f'<line x1="{x0}" x2="{x0 + PW}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        svg.append(f'<text x="{x0 - 4}" y="{y + 4:.1f}" text-anchor="end">{t:g}</text>')
    for r in rates:
        svg.append(f'<text x="{xs(r):.1f}" y="{T + PH + 14}" text-anchor="middle" font-size="9">{r}</text>')
    svg.append(f'<text x="{x0 + PW / 2}" y="{T + PH + 30}" text-anchor="middle">offered background req/s</text>')
    for m, colour, _ in modes:
        pts = [(xs(r), ys(v * scale)) for r in rates if (v := val(r, m, key)) is not None and v > 0]
        if pts:
            svg.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (colour, " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)))
            svg.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>' for x, y in pts)
for j, (_, colour, label) in enumerate(modes):
    svg.append(f'<rect x="{L + j * 160}" y="{H - 30}" width="12" height="12" fill="{colour}"/>')
    svg.append(f'<text x="{L + j * 160 + 18}" y="{H - 20}">{label}</text>')
svg.append("</svg>")
open(sys.argv[2], "w").write("\n".join(svg) + "\n")
PY
fi
cat "$out/table.md"
log "took $(($(date +%s) - started)) s; results in $out"
