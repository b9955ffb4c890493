#!/usr/bin/env bash
# Builds the CXF WS-Eventing 2011 interop peer (interop/cxf: Apache CXF pinned in pom.xml)
# with Maven and prints the path of its runnable jar (`java -jar JAR consumer|source ...`).
# Idempotent: a build whose pom and sources hash matches is reused (no Maven run).
#   export LATHER_INTEROP_CXF="$(bash interop/cxf/setup.sh)"
# Builds go to $LATHER_INTEROP_CXF_DIR, default ~/.cache/lather-interop/cxf/<hash>.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
hash="$(cd "$here" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)"
out="${LATHER_INTEROP_CXF_DIR:-$HOME/.cache/lather-interop/cxf}/$hash"
jar="$out/lather-cxf-peer.jar"
if [ -f "$jar" ] && [ "$(cat "$out/.lather-hash" 2>/dev/null)" = "$hash" ]; then
  echo "$jar"
  exit 0
fi
# Java 17+ (with javac) and Maven; from apt only when missing (Debian 12: OpenJDK 17).
if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  pkgs="maven default-jdk-headless"
  { apt-get install -y $pkgs || { apt-get update && apt-get install -y $pkgs; }; } >&2
fi
# Builds of earlier sources (named by their hash, holding its stamp) are of no further use.
for old in "$(dirname "$out")"/*/; do
  name="$(basename "$old")"
  if [[ "$name" =~ ^[0-9a-f]{16}$ ]] && [ -f "$old/.lather-hash" ]; then rm -rf "$old"; fi
done
rm -rf "$out"
mkdir -p "$out"
mvn -q -B -f "$here/pom.xml" -Dlather.build.dir="$out" package >&2
echo "$hash" > "$out/.lather-hash"
echo "$jar"
