# shellcheck shell=bash
# Helpers shared by the benchmark scripts in bench/. Source it; do not run it.
#
# Expects $repo (the repository root). Provides process bookkeeping (every
# server started with start_bg is stopped by PID on exit), port and
# readiness helpers, and JSON field extraction for the generator's reports
# (pretty-printed by serde_json, one field per line).

bench_pids=()
bg_pid=""

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
die() { log "error: $*"; exit 1; }

# Stops every process started with start_bg: SIGTERM, then SIGKILL after 5 s.
stop_all() {
    local pid i
    for pid in "${bench_pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${bench_pids[@]}"; do
        for ((i = 0; i < 50; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            log "pid $pid did not stop on SIGTERM; killing it"
            kill -KILL "$pid" 2>/dev/null || true
        fi
        wait "$pid" 2>/dev/null || true
    done
    bench_pids=()
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_bg LOGFILE CMD... : starts CMD in the background (optionally pinned
# with taskset to $SERVER_CPUS), records its PID in bench_pids and in $bg_pid.
start_bg() {
    local logfile=$1
    shift
    if [ -n "${SERVER_CPUS:-}" ]; then
        taskset -c "$SERVER_CPUS" "$@" >"$logfile" 2>&1 &
    else
        "$@" >"$logfile" 2>&1 &
    fi
    bg_pid=$!
    bench_pids+=("$bg_pid")
}

# callgrind_cmd OUTFILE : sets the array `callgrind` to the command prefix that runs a
# program under callgrind, its counts written to OUTFILE (use: "${callgrind[@]}" CMD...).
# glibc copies blocks above a few KiB with `rep movsb` unless source and destination are
# close, and valgrind counts each byte `rep movsb` moves as an instruction: the same copy
# of a large future counted 150 or 7 000 instructions by where the heap placed it, moving
# a gateway's count by 14 000 between runs of one build. Raising the threshold (after any
# tunables the caller set) keeps every copy in the vector loop, whose count follows the
# bytes copied.
callgrind_cmd() {
    callgrind=(env
        "GLIBC_TUNABLES=${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.cpu.x86_rep_movsb_threshold=1000000000"
        valgrind --tool=callgrind --callgrind-out-file="$1"
        --dump-instr=no --compress-strings=no --compress-pos=no)
}

# port_open PORT : true when something accepts on 127.0.0.1:PORT.
port_open() {
    # shellcheck disable=SC2016 # expanded by the inner bash
    timeout 1 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$1" 2>/dev/null
}

# free_port : prints a loopback port nobody listens on.
# Ports are picked below the kernel's ephemeral range, where outgoing connections (the
# generator's) cannot hold them.
access_log_off() { # BINARY
    # Prints `access_log = false` when BINARY knows the key, else nothing: a throughput
    # run turns the per-request log line off, and builds from before the key refuse it
    # (and log no requests anyway).
    local probe
    probe="$(mktemp)"
    printf '[server]\naccess_log = false\n' >"$probe"
    if "$1" check --config "$probe" >/dev/null 2>&1; then
        echo "access_log = false"
    fi
    rm -f "$probe"
}

free_port() {
    local p _ low=32768
    read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    [ "$low" -gt 12000 ] || low=32768
    for _ in $(seq 1 200); do
        p=$((10000 + RANDOM % (low - 10000)))
        if ! port_open "$p"; then
            echo "$p"
            return 0
        fi
    done
    die "no free port found"
}

# http_get_status PORT PATH : status code of GET http://127.0.0.1:PORT/PATH
# (empty when there is no answer). Uses bash's /dev/tcp, no curl needed.
http_get_status() {
    # shellcheck disable=SC2016 # expanded by the inner bash
    timeout 2 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$0" || exit 1
        printf "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n" "$1" "$0" >&3
        head -n1 <&3' "$1" "$2" 2>/dev/null | awk '{print $2}'
}

# start_nats LOGFILE [ARGS...] : starts Debian's nats-server on a free loopback port with
# ARGS (e.g. `-js -sd DIR`), waits up to 5 s for its port; sets nats_port and nats_pid.
start_nats() {
    local logfile=$1
    shift
    command -v nats-server >/dev/null || die "nats-server not found (apt-get install -y nats-server)"
    nats_port="$(free_port)"
    start_bg "$logfile" nats-server -a 127.0.0.1 -p "$nats_port" "$@"
    nats_pid=$bg_pid
    for _ in $(seq 1 50); do port_open "$nats_port" && break; sleep 0.1; done
    port_open "$nats_port" || die "nats-server did not start; see $logfile"
}

# wait_for NAME PID LOGFILE SECONDS CHECK... : polls CHECK every 0.1 s until
# it succeeds; fails (showing the log) when PID dies or time runs out.
wait_for() {
    local name=$1 pid=$2 logfile=$3 seconds=$4 i
    shift 4
    for ((i = 0; i < seconds * 10; i++)); do
        if ! kill -0 "$pid" 2>/dev/null; then
            log "$name exited early; its log:"
            cat "$logfile" >&2
            exit 1
        fi
        if "$@"; then
            return 0
        fi
        sleep 0.1
    done
    log "$name not ready after ${seconds}s; its log:"
    cat "$logfile" >&2
    exit 1
}

# health_ok PORT : lather's GET /health answers 200.
health_ok() { [ "$(http_get_status "$1" /health)" = "200" ]; }

# json_num FILE KEY : the first number-valued "KEY" in FILE.
json_num() {
    sed -n "s/^ *\"$2\": \\([-0-9.eE+]*\\),\\{0,1\\}\$/\\1/p" "$1" | head -n1
}

# The generator: `lather-bench http` unless BENCH_CMD overrides it (a command
# taking the same arguments, e.g. target/release/examples/bench-http).
bench_cmd() {
    if [ -n "${BENCH_CMD:-}" ]; then
        # shellcheck disable=SC2086 # BENCH_CMD may hold a command with words
        set -- ${BENCH_CMD} "$@"
    else
        [ -x "$LATHER_BENCH" ] || die "$LATHER_BENCH not found (build lather-bench or set LATHER_BENCH)"
        set -- "$LATHER_BENCH" http "$@"
    fi
    if [ -n "${CLIENT_CPUS:-}" ]; then
        taskset -c "$CLIENT_CPUS" "$@"
    else
        "$@"
    fi
}

# verify_echo NAME URL OUTFILE : one SOAP echo request must get a 200 whose
# body names urn:lather:echo (both echo servers answer in that namespace).
verify_echo() {
    local name=$1 url=$2 out=$3 rc=0
    bench_cmd "$url" --requests 1 --connections 1 --duration 10 --quiet \
        --expect "urn:lather:echo" --json "$out" >/dev/null || rc=$?
    if [ "$rc" -ne 0 ]; then
        die "$name: the load generator failed (exit $rc) on its probe request to $url"
    fi
    if [ "$(json_num "$out" requests_ok)" != "1" ] || [ "$(json_num "$out" 200)" != "1" ]; then
        log "$name: the probe request to $url did not get a 200 naming urn:lather:echo; report:"
        cat "$out" >&2
        if command -v curl >/dev/null 2>&1; then
            log "the same request with curl:"
            curl -sS -i -X POST -H 'Content-Type: text/xml; charset=utf-8' \
                -H 'SOAPAction: "urn:lather:echo#echo"' \
                --data-binary '<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><ns:echo xmlns:ns="urn:lather:echo"><text>probe</text></ns:echo></soap:Body></soap:Envelope>' \
                "$url" >&2 || true
            echo >&2
        fi
        exit 1
    fi
    log "$name: probe request OK (200, urn:lather:echo)"
}

# ratio A B : A/B with 3 decimals ("-" when B is 0 or empty).
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "-"; else printf "%.3f", a / b }'
}

# mean X... : arithmetic mean.
mean() {
    printf '%s\n' "$@" | awk '{ s += $1; n++ } END { if (n) printf "%.1f", s / n; else print 0 }'
}

# json_ratio R : R as a JSON value (null for "-").
json_ratio() { if [ "$1" = "-" ]; then echo null; else echo "$1"; fi; }

# The knobs every benchmark script reads from the environment, with their defaults.
# Needs $repo. (Assigned globally: the calling script uses them.)
# shellcheck disable=SC2034
bench_defaults() {
    DURATION="${DURATION:-10}"
    WARMUP="${WARMUP:-2}"
    CONNECTIONS="${CONNECTIONS:-32}"
    ROUNDS="${ROUNDS:-2}"
    PAYLOAD_BYTES="${PAYLOAD_BYTES:-100}"
    BENCH_THREADS="${BENCH_THREADS:-1}"
    LATHER="${LATHER:-$repo/target/release/lather}"
    LATHER_BENCH="${LATHER_BENCH:-$repo/target/release/lather-bench}"
}

# results_dir NAME: makes and prints target/bench-results/NAME-<timestamp>.
results_dir() {
    local dir
    dir="$repo/target/bench-results/$1-$(date +%Y%m%d-%H%M%S)"
    mkdir -p "$dir"
    echo "$dir"
}

# Builds the lather and lather-bench binaries in release, unless SKIP_BUILD=1.
build_lather() {
    if [ "${SKIP_BUILD:-0}" != "1" ]; then
        log "building lather and lather-bench (release)"
        (cd "$repo" && cargo build --release -p lather-cli -p lather-bench)
    fi
}

# metric_value PORT SERIES : a value from the /metrics of the server on 127.0.0.1:PORT, 0
# when absent. SERIES with labels (`name{a="x"}`) sums every series of that name whose
# labels begin with those given (later labels, such as operation, are summed over);
# without labels, the last line starting with SERIES.
metric_value() {
    # shellcheck disable=SC2016 # expanded by the inner bash
    timeout 5 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$0" || exit 1
        printf "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n" "$0" >&3
        cat <&3' "$1" | awk -v p="$2" '
        BEGIN { labelled = substr(p, length(p), 1) == "}"; base = substr(p, 1, length(p) - 1) }
        labelled && index($0, base) == 1 {
            next_char = substr($0, length(base) + 1, 1)
            if (next_char == "," || next_char == "}") v += $NF
            next
        }
        !labelled && index($0, p) == 1 {v = $NF}
        END {print v + 0}'
}

# cpu_ticks PID : utime + stime of the process (all threads), in clock ticks.
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }

# median_over NAME KEY : the median of the associative array NAME's entries
# NAME[KEY,1] … NAME[KEY,ROUNDS].
median_over() {
    local -n values=$1
    local k
    for k in $(seq 1 "$ROUNDS"); do echo "${values[$2,$k]}"; done | median
}

# median : the median of the numbers on stdin, one per line.
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# echo_wrk_script DIR : writes DIR/request.xml, a SOAP 1.1 echo request with a text of
# $PAYLOAD_BYTES bytes, and DIR/post.lua, a wrk script POSTing it; prints the script's path.
echo_wrk_script() {
    printf '<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><ns:echo xmlns:ns="urn:lather:echo"><text>%s</text></ns:echo></soap:Body></soap:Envelope>' \
        "$(head -c "${PAYLOAD_BYTES:-100}" /dev/zero | tr '\0' x)" >"$1/request.xml"
    cat >"$1/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "text/xml; charset=utf-8"
wrk.headers["SOAPAction"] = '"urn:lather:echo#echo"'
local f = io.open("$1/request.xml", "rb"); wrk.body = f:read("*a"); f:close()
LUA
    echo "$1/post.lua"
}

# wrk_stat FILE KEY : a figure from wrk --latency output: rps, requests, p50, p99, max or
# non2xx (0 when wrk printed no such line).
wrk_stat() {
    case $2 in
        rps) awk '/Requests\/sec/ { printf "%.0f", $2 }' "$1" ;;
        requests) awk '/requests in/ { print $1 }' "$1" ;;
        p50) awk '$1 == "50%" { print $2 }' "$1" ;;
        p99) awk '$1 == "99%" { print $2 }' "$1" ;;
        max) awk '$1 == "Latency" { print $4 }' "$1" ;;
        non2xx) awk '/Non-2xx/ { n = $NF } END { print n + 0 }' "$1" ;;
        *) die "wrk_stat: unknown key $2" ;;
    esac
}
