#!/usr/bin/env bash
# Builds the gSOAP echo server used as the baseline for lather's benchmarks.
#
# - installs Debian's gsoap + libgsoap-dev when soapcpp2 is missing,
# - runs soapcpp2 on echo.h in target/gsoap/gen,
# - compiles server.c + the generated code with -O2,
# - prints the path of the binary (the only line on stdout).
#
# Env: CC (default cc), CFLAGS_EXTRA (appended), TARGET_DIR (default <repo>/target).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
target_dir="${TARGET_DIR:-$repo/target}"
out_dir="$target_dir/gsoap"
gen_dir="$out_dir/gen"
bin="$out_dir/lather-gsoap-echo"
cc="${CC:-cc}"

log() { echo "build.sh: $*" >&2; }

if ! command -v soapcpp2 >/dev/null 2>&1 || [ ! -f /usr/include/stdsoap2.h ]; then
    log "soapcpp2 or stdsoap2.h missing: installing gsoap libgsoap-dev"
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo="sudo"
        else
            log "not root and no sudo: install gsoap and libgsoap-dev yourself"
            exit 1
        fi
    fi
    export DEBIAN_FRONTEND=noninteractive
    if ! $sudo apt-get install -y gsoap libgsoap-dev >&2; then
        $sudo apt-get update >&2
        $sudo apt-get install -y gsoap libgsoap-dev >&2
    fi
fi

# The flags must match the ones libgsoap was built with (struct soap layout).
if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists gsoap; then
    gsoap_cflags="$(pkg-config --cflags gsoap)"
    gsoap_libs="$(pkg-config --libs gsoap)"
else
    gsoap_cflags="-DWITH_IPV6 -DWITH_DOM"
    gsoap_libs="-lgsoap"
fi

# Up to date: nothing to do (set FORCE=1 to rebuild anyway).
if [ "${FORCE:-0}" != "1" ] && [ -x "$bin" ] &&
    [ "$bin" -nt "$here/echo.h" ] && [ "$bin" -nt "$here/server.c" ] &&
    [ "$bin" -nt "$here/build.sh" ]; then
    log "up to date: $bin"
    echo "$bin"
    exit 0
fi

rm -rf "$gen_dir"
mkdir -p "$gen_dir"

# -c: C code, -S: server side only, -L: no soapServerLib/soapClientLib,
# -x: no sample XML messages, -w: no WSDL/XSD, -d: output dir.
log "soapcpp2 $here/echo.h -> $gen_dir"
if ! soapcpp2 -c -S -L -x -w -d "$gen_dir" "$here/echo.h" >"$out_dir/soapcpp2.log" 2>&1; then
    cat "$out_dir/soapcpp2.log" >&2
    log "soapcpp2 failed"
    exit 1
fi

log "compiling $bin"
# shellcheck disable=SC2086 # the flag variables are word lists on purpose
"$cc" -O2 -pthread $gsoap_cflags -I"$gen_dir" ${CFLAGS_EXTRA:-} \
    -o "$bin" \
    "$here/server.c" "$gen_dir/soapC.c" "$gen_dir/soapServer.c" \
    $gsoap_libs -lm

echo "$bin"
