#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/*_fuzz.cc) into build-fuzz/ and runs each one over a copy of
# its seed corpus (fuzz/corpus/<name>/), as many at once as there are cores.
#   scripts/fuzz.sh smoke         # 2,000 runs (at most 15 s) each (scripts/test.sh, CI)
#   scripts/fuzz.sh 300           # 300 seconds each
#   scripts/fuzz.sh build         # build only
#   scripts/fuzz.sh smoke NAME..  # only these targets (e.g. hwloc_xml_fuzz)
# The build is clang with AddressSanitizer and UBSan (a UB report aborts), -O0 (half the compile
# time of -O1; the smoke runs are short), the layers with
# libFuzzer's coverage instrumentation, each layer in unity batches; the accel binary and the
# tests are not built. A crash, a leak, a timeout (10 s) or any other exception than InputError
# (which every target catches) fails the run and leaves the input in build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-smoke}
shift || true
case "$mode" in
  # 2,000 runs, or 15 s when a target's runs are slow (hwloc_xml_fuzz: hwloc's importer costs
  # about 50 ms a run under ASan at -O0): a check of every target, not a search (use SECONDS).
  # Since 2026-12-08 (3,000 runs or 30 s before): 29 targets summed 192 s of fuzzing, half of the
  # fuzz-run phase on 2 cores, and the suite must stay within 20 minutes.
  smoke) args=(-runs=2000 -max_total_time=15) ;;
  build) args=() ;;
  *[!0-9]* | "") echo "usage: scripts/fuzz.sh smoke|build|SECONDS [TARGET...]" >&2; exit 2 ;;
  *) args=(-max_total_time="$mode") ;;
esac

CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DACCEL_FUZZ=ON -DACCEL_TESTS=OFF -DACCEL_BENCH=OFF \
  -DACCEL_STATIC_GRPC=OFF -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -gline-tables-only" \
  >/dev/null
ninja -C build-fuzz fuzz_targets
if [ "$mode" = build ]; then exit 0; fi

if [ $# -gt 0 ]; then
  bins=()
  for name in "$@"; do bins+=("build-fuzz/fuzz/$name"); done
else
  # The slowest first, so the last target to start is a quick one (scripts/test.sh waits for all).
  bins=()
  for name in hwloc_xml_fuzz kubelet_checks_fuzz cluster_template_fuzz dcgm_counters_fuzz fleet_api_fuzz; do
    [ -x "build-fuzz/fuzz/$name" ] && bins+=("build-fuzz/fuzz/$name")
  done
  for bin in build-fuzz/fuzz/*_fuzz; do
    case " ${bins[*]} " in *" $bin "*) ;; *) bins+=("$bin") ;; esac
  done
fi

# One target: a fresh copy of its corpus (new inputs stay out of the repository), its log in
# build-fuzz/<name>.log. Exit status: the fuzzer's.
run_one() {
  local bin=$1 name corpus status=0
  name=$(basename "$bin")
  corpus=$(mktemp -d)
  [ -d "fuzz/corpus/${name%_fuzz}" ] && cp -r "fuzz/corpus/${name%_fuzz}/." "$corpus/"
  "$bin" "${args[@]}" -max_len=8192 -timeout=10 -artifact_prefix=build-fuzz/ "$corpus" \
    >"build-fuzz/$name.log" 2>&1 || status=$?
  rm -rf "$corpus"
  return "$status"
}

jobs_max=$(nproc)
declare -A running=()
failed=()
finish_one() {
  local pid
  for pid in "${!running[@]}"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      local name=${running[$pid]}
      unset "running[$pid]"
      if wait "$pid"; then
        echo "fuzz: $name: $(tail -n 1 "build-fuzz/$name.log")"
      else
        tail -n 60 "build-fuzz/$name.log"
        echo "fuzz: $name FAILED; the input is in build-fuzz/ (crash-*, timeout-*, leak-*)"
        failed+=("$name")
      fi
    fi
  done
}
for bin in "${bins[@]}"; do
  [ -x "$bin" ] || { echo "fuzz: no target $bin" >&2; exit 2; }
  while [ "${#running[@]}" -ge "$jobs_max" ]; do sleep 0.2; finish_one; done
  run_one "$bin" &
  running[$!]=$(basename "$bin")
done
while [ "${#running[@]}" -gt 0 ]; do sleep 0.2; finish_one; done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: all ${#bins[@]} targets ran clean"
