#!/bin/sh
# Times Nova (Debian's python3-nova) and accel's place_bench on the same placement cases and
# prints the comparison table (see docs/benchmarks.md).
#   bench/compare_nova.sh [path/to/place_bench] [--json out.json] [--skip-slow] ...
# Installs python3-nova (Debian 12: Nova 26.2.2) when it is missing; that needs root.
set -eu
here=$(dirname "$0")
if ! dpkg-query -W -f='${Status}' python3-nova 2>/dev/null | grep -q 'install ok installed'; then
  echo "python3-nova is not installed; installing it (about 270 packages, 360 MB)" >&2
  apt-get install -y python3-nova >&2
fi
exec /usr/bin/python3 "$here/nova_compare.py" "$@"
