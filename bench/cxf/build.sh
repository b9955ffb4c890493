#!/usr/bin/env bash
# Builds the Apache CXF echo server used as the JVM baseline of bench/digest-vs-cxf.sh.
#
# - runs `mvn package` (compiles, runs the unit tests, copies the runtime
#   dependencies to target/lib/), unless the jar is newer than every source,
# - prints the path of the runnable jar (the only line on stdout):
#   java -jar <jar> PORT [ROUNDS [INTERCEPTORS]]
#
# Env: MVN (default mvn), MVN_ARGS (extra Maven arguments, e.g. -o),
#      FORCE=1 (rebuild even when up to date).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
jar="$here/target/cxf-digest-echo.jar"
mvn="${MVN:-mvn}"

log() { echo "build.sh: $*" >&2; }

command -v java >/dev/null 2>&1 || { log "java not found (Java 17+ is needed)"; exit 1; }
command -v "$mvn" >/dev/null 2>&1 || { log "$mvn not found (Maven 3.8+ is needed)"; exit 1; }

# Up to date: the jar and its lib/ are newer than the pom, this script and every source.
if [ "${FORCE:-0}" != "1" ] && [ -f "$jar" ] && [ -d "$here/target/lib" ] &&
    [ -z "$(find "$here/pom.xml" "$here/build.sh" "$here/src" -newer "$jar" -print -quit)" ]; then
    log "up to date: $jar"
    echo "$jar"
    exit 0
fi

log "mvn package in $here"
# shellcheck disable=SC2086 # MVN_ARGS is a word list on purpose
if ! "$mvn" -B -q -Dstyle.color=never -f "$here/pom.xml" ${MVN_ARGS:-} clean package >&2; then
    log "mvn package failed"
    exit 1
fi
[ -f "$jar" ] || { log "no jar at $jar after the build"; exit 1; }
echo "$jar"
