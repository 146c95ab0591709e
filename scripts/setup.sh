#!/usr/bin/env bash
# Installs what accel needs from Debian 12's archive (only what is missing), then configures and
# builds it with CMake + Ninja into build/. Run as root on a fresh machine; safe to re-run.
#   scripts/setup.sh            # release build with tests and benchmarks
#   BUILD_DIR=out scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(g++ cmake ninja-build pkg-config python3
  libhwloc-dev hwloc nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libsqlite3-dev
  libgtest-dev libgmock-dev libbenchmark-dev libvirt-clients libxml2-utils libxml2-dev
  clang libclang-rt-14-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libcpp-httplib-dev libssl-dev libcrypt-dev prometheus)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} >/dev/null
ninja -C "$BUILD_DIR"
