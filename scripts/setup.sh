#!/usr/bin/env bash
# Installs what accel needs from Debian 12's archive (only what is missing), then configures and
# builds it with CMake + Ninja into build/. Run as root on a fresh machine; safe to re-run.
#   scripts/setup.sh                   # packages, then the accel binary (and the fake NVML the
#                                      # main job's exporter demo loads)
#   scripts/setup.sh all               # packages, then everything `ninja` builds (the tests too)
#   scripts/setup.sh cluster_tests     # packages, then the named ninja targets
#   scripts/setup.sh --packages        # packages only
#   BUILD_DIR=out scripts/setup.sh     # another build directory
# The build is g++ 12, -O2 without debug information (CMAKE_BUILD_TYPE=Release; BUILD_TYPE=
# RelWithDebInfo scripts/setup.sh adds it), each layer compiled in unity batches
# (docs/testing.md). Benchmarks are built on demand: ninja -C build benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every package is named here: apt runs with --no-install-recommends, so nothing arrives by
# chance and the tests see the same machine on every fresh Debian 12 (docs/testing.md).
PACKAGES=(g++ cmake ninja-build pkg-config
  libhwloc-dev hwloc nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libsqlite3-dev
  libgtest-dev libgmock-dev libbenchmark-dev libxml2-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libcpp-httplib-dev libssl-dev libcrypt-dev
  # the fleet store's PostgreSQL engine; the tests start their own server (initdb in a temp dir)
  libpqxx-dev postgresql
  # hwloc's plugins, above all its libxml2 XML importer. libhwloc15 only Recommends them, so
  # --no-install-recommends would leave them out, while `apt install hwloc` on a user's host
  # (recommends on, apt's default) brings them: install them so accel is built and tested with
  # the importer users get. The tests force each importer in turn (HWLOC_LIBXML_IMPORT=0/1),
  # so they mean the same on a machine without the plugins.
  libhwloc-plugins
  # Tools the tests run (a test that cannot find one skips, and scripts/check-skips.sh fails):
  #   python3          scripts/check-skips.sh
  #   libvirt-clients  virt-xml-validate and virsh (libvirt domain XML, NCCL guest topology)
  #   libxml2-utils    xmllint (libvirt XML well-formedness)
  #   prometheus       /usr/bin/prometheus (end-to-end scrapes) and /usr/bin/promtool (lint, rules)
  #   chromium         headless, loads the fleet page of a running `accel fleet serve`
  #   python3-jsonschema, python3-yaml  check the fleet API's responses against docs/fleet-api.yaml
  #                    and generated Kubernetes objects with ../shared/crds/validate.py
  #   python3-nova     Nova's scheduler classes for tests/openstack (the AccelFleetFilter tests)
  python3 libvirt-clients libxml2-utils prometheus chromium python3-jsonschema python3-yaml python3-nova
  # fuzz targets (scripts/fuzz.sh): clang's libFuzzer, ASan and UBSan, linked by lld
  clang libclang-rt-14-dev lld)

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
if [ "${1:-}" = --packages ]; then exit 0; fi

BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" >/dev/null
if [ $# -eq 0 ]; then
  ninja -C "$BUILD_DIR" accel fake_nvml
elif [ "$1" = all ]; then
  ninja -C "$BUILD_DIR"
else
  ninja -C "$BUILD_DIR" "$@"
fi
