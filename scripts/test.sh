#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine, as root: the system packages the tests
# use (installed after an `apt-get update` when one is missing), the two interoperability
# peers, then `cargo test --workspace` (extra arguments are passed to it). A setup step
# that fails stops the script: the tests never run with a peer missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v nats-server >/dev/null 2>&1 || need+=(nats-server)
{ command -v soapcpp2 >/dev/null 2>&1 && [ -f /usr/include/stdsoap2.h ]; } || need+=(gsoap libgsoap-dev)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
if [ "${#need[@]}" -gt 0 ]; then
  echo "== installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update >&2
  apt-get install -y "${need[@]}" >&2
fi
echo "== $(nats-server --version); soapcpp2 at $(command -v soapcpp2); ip at $(command -v ip)" >&2

echo "== interop peers (sdc11073 in a venv, Apache CXF built with Maven)" >&2
LATHER_INTEROP_PYTHON="$(bash interop/setup.sh)"
LATHER_INTEROP_CXF="$(bash interop/cxf/setup.sh)"
export LATHER_INTEROP_PYTHON LATHER_INTEROP_CXF
echo "== $("$LATHER_INTEROP_PYTHON" -m pip show sdc11073 | grep -i '^version'); CXF peer $LATHER_INTEROP_CXF" >&2

echo "== cargo test --workspace" >&2
cargo test --workspace "$@"
