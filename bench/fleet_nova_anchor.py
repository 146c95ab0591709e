#!/usr/bin/python3
"""Nova's side of bench/fleet_bench: what NUMATopologyFilter + PciPassthroughFilter
cost per request over Placement's candidate hosts, on the fleet_bench fleet.

fleet_bench runs it in the same run (docs/benchmarks.md, "Fleet"); by hand:

    /usr/bin/python3 bench/fleet_nova_anchor.py --spec SPEC.json --json OUT.json \
        [--demo ../shared/reference/nova_fit_demo.py] [--rounds 3]

SPEC.json (written by fleet_bench) holds
  skus:       per SKU of the fleet: cells, cores per cell, threads per core,
              memory, 2M/1G hugepages per cell, accelerator pools per cell
              (vendor:product, count), read from the same fixtures accel loads;
  palette:    the small flavors the partly used hosts' claims were drawn from;
  flavor:     the measured flavor (gpu-4-2cell: 32 dedicated vCPUs, 2 guest
              cells, 1G pages, 4 accelerators of the multi-spec alias `gpu`,
              numa_policy required);
  candidates: the hosts Placement would hand the filters (up to
              max_placement_results = 1000), sampled from the fleet, each with
              the palette flavors of its claims in order.

Hosts are built with the reference driver's build_host (imported by path, not
copied; shared_cores=1 as fleet_bench's policy, no reserved 1G page, as the
fixtures have none); PCI pools carry each SKU's real vendor/product ids instead
of the driver's fixed H100 id, and the request's spec lists every id of the
alias, as Nova's multi-spec alias does. Each candidate's claims are replayed
through Nova itself (fit, numa_usage_from_instance_numa, apply_requests), so
Nova sees hosts used the way accel's are (its own CPU choices).

Timed: numa_fit_instance_to_host(host, instance, pci_requests, pci_stats) once
per candidate, in candidate order, each on a fresh obj_clone() of the instance
made outside the timed region (the call mutates the cells it returns); the sum
over all candidates is one request. --rounds rounds; the median round is
reported. Run with the system interpreter, which sees Debian's python3-nova.
"""

import argparse
import gc
import importlib.util
import json
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DEMO = os.path.join(HERE, '..', '..', 'shared', 'reference',
                            'nova_fit_demo.py')


def load_demo(path):
    """Imports nova_fit_demo.py as a module (its main() does not run)."""
    spec = importlib.util.spec_from_file_location('nova_fit_demo', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--spec', required=True)
    ap.add_argument('--json', required=True)
    ap.add_argument('--demo', default=DEFAULT_DEMO)
    ap.add_argument('--rounds', type=int, default=3)
    args = ap.parse_args()

    def fail(message):
        with open(args.json, 'w') as fh:
            json.dump({'error': message}, fh)
        sys.exit(message)

    if not os.path.exists(args.demo):
        fail('reference driver not found: %s' % args.demo)
    try:
        demo = load_demo(args.demo)
    except SystemExit as exc:      # the driver exits when nova is missing
        fail('%s (Debian: apt-get install python3-nova; run with '
             '/usr/bin/python3)' % exc)
    objects = demo.objects
    hardware = demo.hardware
    pci_stats_mod = demo.pci_stats_mod

    with open(args.spec) as fh:
        spec = json.load(fh)
    skus = {s['name']: s for s in spec['skus']}
    gpu_ids = sorted({(p['vendor_id'], p['product_id'])
                      for s in spec['skus'] for p in s['gpu_pools']})

    def request(f):
        """(InstanceNUMATopology, [InstancePCIRequest]) for a flavor row."""
        extra = dict(f['extra'])
        topo, reqs = demo.build_request(vcpus=f['vcpus'],
                                        memory_mb=f['memory_mb'],
                                        extra=extra,
                                        gpu_count=f['gpus'])
        for r in reqs:   # the multi-spec alias `gpu` instead of h100
            r.alias_name = 'gpu'
            r.spec = [{'vendor_id': v, 'product_id': p} for v, p in gpu_ids]
        return topo, reqs

    def new_host(sku):
        host, _ = demo.build_host(
            sku['cells'], cores=sku['cores'], threads=sku['threads'],
            mem_gib=sku['mem_gib'], hp_2m_gib=sku['hp_2m_gib'],
            hp_1g_gib=sku['hp_1g_gib'], reserved_1g_cell0=0, shared_cores=1,
            gpus={})
        pools = [objects.PciDevicePool.from_dict({
            'vendor_id': p['vendor_id'], 'product_id': p['product_id'],
            'numa_node': p['cell'], 'count': p['count'],
            'dev_type': 'type-PCI'}) for p in sku['gpu_pools']]
        pci = pci_stats_mod.PciDeviceStats(
            host, objects.PciDevicePoolList(objects=pools))
        return host, pci

    palette = [request(f) for f in spec['palette']]
    topo, reqs = request(spec['flavor'])

    # Build each distinct (SKU, claims) host once: the fit reads the host and
    # the PCI stats without changing them, as the filters share HostState.
    t0 = time.perf_counter()
    built = {}
    claims_refused = 0
    candidates = []
    for c in spec['candidates']:
        key = (c['sku'], tuple(c['claims']))
        if key not in built:
            host, pci = new_host(skus[c['sku']])
            for k in c['claims']:
                ptopo, preqs = palette[k]
                res = demo.fit(host, ptopo.obj_clone(), preqs, pci)
                if res is None:
                    claims_refused += 1
                    continue
                host = hardware.numa_usage_from_instance_numa(host, res)
                if preqs:
                    demo.consume_pci(pci, preqs, res.cells)
            built[key] = (host, pci)
        candidates.append((c['sku'],) + built[key])
    build_s = time.perf_counter() - t0

    per_round = []
    per_host = {}
    fits = 0
    for _ in range(args.rounds):
        copies = [topo.obj_clone() for _ in candidates]
        gc.collect()
        total = 0.0
        fits = 0
        for (sku, host, pci), inst in zip(candidates, copies):
            t = time.perf_counter()
            res = demo.fit(host, inst, reqs, pci)
            dt = time.perf_counter() - t
            total += dt
            per_host.setdefault(sku, []).append(dt * 1e3)
            fits += res is not None
        per_round.append(total * 1e3)

    every = sorted(x for v in per_host.values() for x in v)
    out = {
        'nova_version': _nova_version(),
        'python': platform.python_version(),
        'candidates': len(candidates),
        'distinct_hosts_built': len(built),
        'build_s': build_s,
        'claims_refused_by_nova': claims_refused,
        'rounds': args.rounds,
        'ms_per_request_rounds': per_round,
        'ms_per_request_median': statistics.median(per_round),
        'ms_per_host_median': statistics.median(every),
        'ms_per_host_p99': every[min(len(every) - 1, int(0.99 * len(every)))],
        'fits': fits,
        'per_sku': {
            sku: {'hosts': len(v) // args.rounds,
                  'mean_ms': statistics.fmean(v),
                  'median_ms': statistics.median(v),
                  'p99_ms': sorted(v)[min(len(v) - 1, int(0.99 * len(v)))]}
            for sku, v in sorted(per_host.items())},
    }
    with open(args.json, 'w') as fh:
        json.dump(out, fh, indent=1)
    print('nova %s: %d candidates (%d distinct host states, built in %.1f s), '
          '%.1f ms per request (rounds %s), %.3f ms per host, %d fit' % (
              out['nova_version'], len(candidates), len(built), build_s,
              out['ms_per_request_median'],
              ', '.join('%.0f' % r for r in per_round),
              out['ms_per_host_median'], fits))


def _nova_version():
    try:
        from importlib.metadata import version
        return version('nova')
    except Exception:  # noqa
        return '?'


if __name__ == '__main__':
    main()
