#!/usr/bin/env bash
# Every test: set up and build, run the unit/integration/property tests (ctest), then a short
# run of each fuzz target (libFuzzer, clang, ASan+UBSan) over its seed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)"
scripts/fuzz.sh smoke
