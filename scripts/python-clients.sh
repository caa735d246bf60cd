#!/usr/bin/env bash
# The Python P4Runtime clients the switch is tested against, each in its own
# virtualenv under .cache/python (their pinned protobuf versions conflict):
# p4runtime-shell 0.0.6 and finsy 0.30.0, from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
install() { # NAME SPEC
  local dir=".cache/python/$1"
  if [ -x "$dir/bin/python" ] && "$dir/bin/pip" show -q "${2%%==*}" >/dev/null 2>&1; then return; fi
  rm -rf "$dir"
  python3 -m venv "$dir"
  "$dir/bin/pip" install -q --disable-pip-version-check "$2"
}
install p4runtime-shell p4runtime-shell==0.0.6
install finsy finsy==0.30.0
echo "python clients: $(.cache/python/p4runtime-shell/bin/pip show p4runtime-shell | grep ^Version), finsy $(.cache/python/finsy/bin/pip show finsy | grep ^Version)"
