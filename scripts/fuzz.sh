#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/*_fuzz.cc) with clang + ASan/UBSan into build-fuzz/ and runs
# each one.   scripts/fuzz.sh smoke     # a few thousand runs each (CI)
#             scripts/fuzz.sh 300       # 300 seconds each
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-smoke}
CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DACCEL_FUZZ=ON -DACCEL_TESTS=OFF -DACCEL_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=Debug >/dev/null
ninja -C build-fuzz fuzz_targets
for bin in build-fuzz/fuzz/*_fuzz; do
  name=$(basename "$bin")
  corpus=$(mktemp -d)
  [ -d "fuzz/corpus/${name%_fuzz}" ] && cp -r "fuzz/corpus/${name%_fuzz}/." "$corpus/"
  if [ "$mode" = smoke ]; then args=(-runs=3000); else args=(-max_total_time="$mode"); fi
  echo "fuzz: $name ${args[*]}"
  log=build-fuzz/$name.log
  if ! "$bin" "${args[@]}" -max_len=8192 -timeout=10 -artifact_prefix=build-fuzz/ "$corpus" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $name FAILED; the input is in build-fuzz/ (crash-*, timeout-*, leak-*)"
    exit 1
  fi
  tail -n 1 "$log"
done
echo "fuzz: all targets ran clean"
