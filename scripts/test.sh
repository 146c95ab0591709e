#!/usr/bin/env bash
# Every test: set up and build, run the unit/integration/property tests (ctest), check that no
# test was skipped for a reason other than ../shared being absent (scripts/check-skips.sh), then
# a short run of each fuzz target (libFuzzer, clang, ASan+UBSan) over its seed corpus.
# docs/testing.md says what the suite needs and what it must not depend on.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
junit="$(cd "$BUILD_DIR" && pwd)/ctest-junit.xml"
rm -f "$junit"
status=0
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" --output-junit "$junit" || status=$?
# Runs after a failing ctest too, so one run lists both the failures and the skips.
scripts/check-skips.sh "$junit" || status=1
if [ "$status" -ne 0 ]; then exit "$status"; fi
scripts/fuzz.sh smoke
