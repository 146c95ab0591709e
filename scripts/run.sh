#!/usr/bin/env bash
# The main job: set up and build, show this host's topology, then place the example flavors on
# this host and on the HGX H100 fixture (a no-fit on a host without GPUs is an answer, not a failure),
# run the exporter once, show MIG layouts / validation / a plan, the training-fabric tools (doctor,
# GPU<->NIC pairing, NCCL settings, tune plan), a small fleet of the fixtures with its capacity,
# the cluster template's check and node-group plan (guest layout, kubelet, vendor stack, Cluster API per group), then run the node agent, `accel serve`, which stays
# in the foreground (ACCEL_RUN_ONCE=1: once, then exit).
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

echo; echo "== accel exporter --once (this host: the vendor libraries it finds)"
"$accel" exporter --once --topology live | grep -v '^#' | head -n 20 || true

fake="$BUILD_DIR/tests/fakes/nvml/libnvidia-ml.so.1"
if [ -f "$fake" ]; then
  echo; echo "== accel exporter --once on the fake NVML (8 x H100, 4 in MIG mode): dashboard 12239's series"
  FAKE_NVML_CONFIG=tests/fakes/nvml/examples/h100x8-mig.json \
    "$accel" exporter --once --vendors nvidia --nvml-library "$fake" \
      --topology fixtures/hosts/hgx-h100.json |
    grep -E '^(DCGM_FI_DEV_(GPU_TEMP|POWER_USAGE|SM_CLOCK|GPU_UTIL|FB_USED)|DCGM_FI_PROF_PIPE_TENSOR_ACTIVE|accel_device_up)\{' |
    awk -F'{' '$1 != last { n = 0; last = $1 } n++ < 2'   # the first two series of each family
  echo "(serve it: accel exporter, then curl localhost:9400/metrics; see docs/telemetry.md)"
fi

echo; echo "== accel mig: the 19 maximal A100-40GB layouts of NVIDIA's five classic profiles"
"$accel" mig layouts --gpu A100-SXM4-40GB --maximal --profiles 1g.5gb,2g.10gb,3g.20gb,4g.20gb,7g.40gb
echo; echo "== accel mig validate examples/mig/h100-mixed.yaml, then a plan for examples/mig/fleet.yaml"
"$accel" mig validate examples/mig/h100-mixed.yaml
if [ -f examples/mig/fleet.yaml ]; then
  "$accel" mig plan --fleet examples/mig/fleet.yaml --demand examples/mig/demand.yaml || [ $? = 1 ]
fi

echo; echo "== multi-node training: accel doctor (this host; exit 1/4 = warnings/failures found)"
"$accel" doctor || true
hgx=fixtures/hosts/hgx-h100.json
echo; echo "== accel fabric matrix / pairs on $hgx (each GPU with the NIC behind its own PCIe switch)"
"$accel" fabric matrix -t "$hgx" | head -n 21
"$accel" fabric pairs -t "$hgx"
echo; echo "== accel fabric env on $hgx (NCCL/UCX settings of a training pod)"
"$accel" fabric env -t "$hgx" | grep -E '^export|^    [0-9]\)' | head -n 8
echo; echo "== accel tune plan on $hgx for examples/flavors/gpu-1g.yaml (kernel args, hugepages, CPU sets)"
"$accel" tune plan -t "$hgx" --flavors examples/flavors/gpu-1g.yaml \
  --aliases examples/flavors/aliases.json | sed -n '1,12p'

echo; echo "== accel fleet: a small fleet of the fixtures in a fresh SQLite store (docs/fleet.md)"
export ACCEL_FLEET_STORE="sqlite:$(dirname "$state")/fleet.db"
for i in 1 2 3; do
  "$accel" fleet host add --topology fixtures/hosts/hgx-h100.json --name "h100-0$i" --label az=a --label gpu=h100 >/dev/null
done
"$accel" fleet host add --topology fixtures/hosts/hgx-h200.json --name h200-01 --label az=b --label gpu=h200 >/dev/null
"$accel" fleet host add --topology fixtures/hosts/epyc-nps4-mi300x.json --name mi300x-01 --label az=b --label gpu=mi300x >/dev/null
"$accel" fleet host add --topology fixtures/hosts/gaudi2-8hpu.json --name gaudi2-01 --label az=b --state maintenance >/dev/null
"$accel" fleet place --flavor examples/flavors/gpu-4-2cell.yaml --aliases examples/flavors/aliases.json \
  --count 2 --claim -o json | grep -E '^  "placed"|^      "(host|claim)"'
"$accel" fleet host list
"$accel" fleet capacity --flavor examples/flavors/gpu-1g.yaml --flavor examples/flavors/gpu-4-2cell.yaml \
  --flavor examples/flavors/numa2.yaml --aliases examples/flavors/aliases.json --group-by az
unset ACCEL_FLEET_STORE

echo; echo "== accel cluster check examples/cluster/ai-prod.yaml: what would go wrong in its node groups (docs/node-groups.md)"
"$accel" cluster check examples/cluster/ai-prod.yaml | tail -n 2
echo; echo "== accel cluster plan examples/cluster/ai-prod.yaml: each node group's guest, kubelet, stack and Cluster API objects"
plan_dir="$(dirname "$state")/cluster-plan"
"$accel" cluster plan examples/cluster/ai-prod.yaml --out "$plan_dir" | grep -E '^[a-z0-9-]+ \(flavor|^  guest:|^  node labels:|topologyManagerPolicy:|reservedSystemCPUs:|memoryManagerPolicy:'
(cd "$plan_dir" && find . -type f | sort | sed 's|^\./|  |')
echo "(every field with its reason: accel cluster plan examples/cluster/ai-prod.yaml; files in $plan_dir)"

if [ -f "$fake" ]; then
  echo; echo "== accel serve --once on the fake NVML (8 x H100, 4 in MIG mode), time-slicing config"
  FAKE_NVML_CONFIG=tests/fakes/nvml/examples/h100x8-mig.json \
    "$accel" serve --once --config examples/agent/time-slicing.yaml --vendors nvidia \
      --nvml-library "$fake" || true
fi

# The main job: the node agent on this host, in the foreground until Ctrl-C (or SIGTERM).
# ACCEL_RUN_ONCE=1 runs it once and exits, for scripts.
echo; echo "== accel serve: the node agent on this host (metrics on :9400/metrics, the host's"
echo "   topology on :9400/topology, NFD labels and the device plugin where a kubelet is). Ctrl-C stops it."
if [ "${ACCEL_RUN_ONCE:-0}" = 1 ]; then
  "$accel" serve --once --config examples/agent/agent.yaml || true
else
  exec "$accel" serve --config examples/agent/agent.yaml
fi
