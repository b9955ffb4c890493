#!/usr/bin/env bash
# Installs the interop peer (sdc11073, pinned in interop/requirements.txt) in a venv and
# prints the venv's python. Idempotent: a venv already holding these pins is reused.
#   export LATHER_INTEROP_PYTHON="$(bash interop/setup.sh)"
# The venv is $LATHER_INTEROP_VENV, default ~/.cache/lather-interop/venv.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${LATHER_INTEROP_VENV:-$HOME/.cache/lather-interop/venv}"
py="$venv/bin/python"
pins="$(sha256sum "$here/requirements.txt" | cut -c1-16)"
if [ -x "$py" ] && [ "$(cat "$venv/.lather-pins" 2>/dev/null)" = "$pins" ] \
  && "$py" -c 'import sdc11073' 2>/dev/null; then
  echo "$py"
  exit 0
fi
mkdir -p "$(dirname "$venv")"
if ! python3 -m venv --clear "$venv" >&2; then
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y python3-venv || { apt-get update && apt-get install -y python3-venv; }; } >&2
  python3 -m venv --clear "$venv" >&2
fi
"$py" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
"$py" -c 'import sdc11073' >&2
echo "$pins" > "$venv/.lather-pins"
echo "$py"
