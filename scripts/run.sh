#!/usr/bin/env bash
# The main job: set up and build, show this host's topology, then place the example flavors on
# this host and on the HGX H100 fixture (a no-fit on a host without GPUs is an answer, not a failure).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
accel="$BUILD_DIR/accel"
state=$(mktemp -d)/state.db   # examples never touch the real claim database

echo; echo "== accel topo (this host)"
"$accel" topo

for host in live fixtures/hosts/hgx-h100.json; do
  echo; echo "== example flavors on $host"
  for f in examples/flavors/*.yaml; do
    "$accel" place --topology "$host" --flavor "$f" --aliases examples/flavors/aliases.json \
      --state "$state" || [ $? = 1 ]
  done
done
