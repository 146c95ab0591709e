#!/usr/bin/env bash
# Every test, as CI runs it (.ci/run), or one layer's tests while you work on it.
#
#   scripts/test.sh                # everything: packages, build, ctest, skip check, fuzz smoke
#   scripts/test.sh cluster        # the contributor's loop: rebuild cluster_tests (and what it
#   scripts/test.sh fleet dra      # needs), run the tests labelled with those layers
#
# Everything: scripts/setup.sh installs what is missing and builds build/ (g++, -O2, unity
# batches; benchmarks are not built), ctest runs every test, scripts/check-skips.sh fails on a
# test skipped for any reason but an absent ../shared, and scripts/fuzz.sh builds build-fuzz/
# (clang, ASan + UBSan + libFuzzer) and runs each fuzz target over its corpus. The phases and
# their times are printed at the end. docs/testing.md says what the suite needs, where its time
# goes and what it must not depend on.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
LAYERS=(common topology placement fleet devices sharing kube http kubeapi dra telemetry agent cli fabric
  tuning doctor kubelet cluster)

phases=()
phase_start=0
begin() { phase_start=$SECONDS; echo "test.sh: == $1"; }
end() {
  local took=$((SECONDS - phase_start))
  phases+=("$(printf '%-12s %2d:%02d' "$1" $((took / 60)) $((took % 60)))")
}
report() {
  echo "test.sh: phases"
  for p in "${phases[@]}"; do echo "  $p"; done
  printf '  %-12s %2d:%02d\n' total $((SECONDS / 60)) $((SECONDS % 60))
}

if [ $# -gt 0 ]; then
  # One layer (or a few): build only their test binaries, run only their tests.
  targets=()
  for layer in "$@"; do
    if ! printf '%s\n' "${LAYERS[@]}" | grep -qx -- "$layer"; then
      echo "test.sh: '$layer' is not a layer; the layers are: ${LAYERS[*]}" >&2
      exit 2
    fi
    targets+=("${layer}_tests")
  done
  begin build; scripts/setup.sh "${targets[@]}"; end build
  begin ctest
  status=0
  labels=$(IFS='|'; echo "^($*)\$")
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(($(nproc) * 2))" -L "$labels" || status=$?
  end ctest
  report
  exit "$status"
fi

trap report EXIT
begin packages; scripts/setup.sh --packages; end packages
begin build; scripts/setup.sh all; end build
begin ctest
junit="$(cd "$BUILD_DIR" && pwd)/ctest-junit.xml"
rm -f "$junit"
status=0
# Two tests a core: many wait on a child (accel, PostgreSQL, Prometheus, Chromium) most of their
# time (docs/testing.md, "Where the time goes").
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(($(nproc) * 2))" --output-junit "$junit" || status=$?
end ctest
# Runs after a failing ctest too, so one run lists both the failures and the skips.
begin skips; scripts/check-skips.sh "$junit" || status=1; end skips
if [ "$status" -ne 0 ]; then exit "$status"; fi
begin fuzz-build; scripts/fuzz.sh build; end fuzz-build
begin fuzz-run; scripts/fuzz.sh smoke; end fuzz-run
