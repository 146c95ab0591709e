#!/usr/bin/python3
"""Time Nova's numa_fit_instance_to_host and accel's Place() on the same cases.

Run with the system interpreter (it sees Debian's python3-nova), usually through
bench/compare_nova.sh:

    /usr/bin/python3 bench/nova_compare.py build/bench/place_bench --json out.json

Nova is used as an installed library; hosts and requests are built by the
reference driver ../shared/reference/nova_fit_demo.py (imported by path, not
copied). The cases below mirror Cases() in bench/place_bench.cc one for one and
are matched to its benchmarks by name: BM_Fit/<case>/cells:<n> times accel's
prepared path, Place(HostState, request), with the host state built outside
the timed loop as Nova's host objects are; the ratio is taken against it.
BM_FitStateless/<case>/cells:<n> (the one-shot Place(host, usage, policy,
request), which builds the state in every call) is shown next to it.
"""

import argparse
import gc
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEMO = os.path.join(HERE, '..', '..', 'shared', 'reference', 'nova_fit_demo.py')


def load_demo(path):
    """Imports nova_fit_demo.py as a module (it parses an empty Nova config
    and disables logging at import; its main() does not run)."""
    spec = importlib.util.spec_from_file_location('nova_fit_demo', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --------------------------------------------------------------------------
# the cases: (case, host cells, build_host kwargs, build_request kwargs,
#             nearly-full cells, shared-CPU limits?, Nova iteration cap, fits?)
# A cap of 0 skips Nova (too slow to time in one run; accel-only row).
# --------------------------------------------------------------------------
def cases():
    rows = []

    def add(name, n, req, host=None, nearly_full=0, limits=False, cap=None,
            fits=True):
        rows.append(dict(case=name, cells=n, host=host or {}, req=req,
                         nearly_full=nearly_full, limits=limits, cap=cap,
                         fits=fits))

    no_pci = {'gpu_count': 0}
    numa4 = {'hw:numa_nodes': '4'}
    for n in (2, 4, 8, 16):
        add('gpu_1g_required', n, {})
    for n in (2, 4, 8, 16):
        add('no_pci', n, no_pci)
    for n in (2, 4, 8):
        add('isolate_nosmt_gpu', n,
            {'extra': {'hw:cpu_thread_policy': 'isolate'}},
            host={'threads': 1})
    for n in (2, 8):
        add('require_gpu', n, {'extra': {'hw:cpu_thread_policy': 'require'}})
    for n in (2, 8):
        add('shared_2m', n,
            {'gpu_count': 0, 'extra': {'hw:cpu_policy': 'shared',
                                        'hw:mem_page_size': '2MB',
                                        'hw:pci_numa_affinity_policy':
                                            'legacy'}},
            host={'shared_cores': 4}, limits=True)
    for n in (2, 4, 8):
        add('emulator_isolate_gpu', n,
            {'extra': {'hw:emulator_threads_policy': 'isolate'}})
    for n in (4, 8):
        add('numa2_gpu', n, {'vcpus': 8, 'memory_mb': 16384,
                             'extra': {'hw:numa_nodes': '2'}})
    for n in (8, 16):
        add('numa4_gpu', n, {'vcpus': 16, 'memory_mb': 32768, 'extra': numa4})
    for n in (8, 16):
        add('numa4_no_pci', n, {'vcpus': 16, 'memory_mb': 32768,
                                'gpu_count': 0, 'extra': numa4})
    add('nofit_cpu_numa4', 8, {'vcpus': 64, 'memory_mb': 32768,
                               'gpu_count': 0, 'extra': numa4}, fits=False)
    add('nearly_full_gpu', 8, {}, nearly_full=6)
    add('nofit_3gpu', 8, {'gpu_count': 3},
        host={'gpus': {n: 2 for n in range(8)}}, cap=200, fits=False)
    for n, cap in ((8, 3), (16, 0)):   # 16 nodes: ~43,680 deep copies
        add('nofit_5gpu_numa4', n,
            {'vcpus': 16, 'memory_mb': 32768, 'gpu_count': 5, 'extra': numa4},
            host={'gpus': {c: 1 for c in range(n)}}, cap=cap, fits=False)
    # each guest cell needs 16 pCPUs, host cells have 14
    for n, k, cap in ((8, 4, 50), (10, 5, 10), (12, 6, 3), (12, 8, 1),
                      (16, 8, 0)):       # 16/8: ~5e8 permutations
        add('nofit_perm_guest%d' % k, n,
            {'vcpus': 16 * k, 'memory_mb': 1024 * k, 'gpu_count': 0,
             'extra': {'hw:numa_nodes': str(k)}}, cap=cap, fits=False)
    return rows


def bench_name(row):
    return 'BM_Fit/%s/cells:%d' % (row['case'], row['cells'])


def stateless_name(name):
    return name.replace('BM_Fit/', 'BM_FitStateless/', 1)


# --------------------------------------------------------------------------
# Nova side
# --------------------------------------------------------------------------
def time_nova(demo, row, iterations, budget_s, skip_slow):
    """Median wall (perf_counter) and CPU (thread_time) µs per call."""
    cap = iterations if row['cap'] is None else min(row['cap'], iterations)
    if cap == 0 or (skip_slow and row['cap'] is not None and row['cap'] < 10):
        return None
    host, pci = demo.build_host(row['cells'], **row['host'])
    if row['nearly_full']:
        host = demo.partially_used(host, row['nearly_full'])
    topo, reqs = demo.build_request(**row['req'])
    limits = None
    if row['limits']:
        limits = demo.objects.NUMATopologyLimits(cpu_allocation_ratio=4.0,
                                                 ram_allocation_ratio=1.0)
    # The fitter mutates the instance cells it is given: one clone per call,
    # made outside the timed region (as nova_fit_demo.time_fit does).
    # A first call warms Nova up; when it takes seconds it is kept as a sample.
    w0, c0 = time.perf_counter(), time.thread_time()
    result = demo.fit(host, topo.obj_clone(), reqs, pci, limits)
    wall, cpu = [time.perf_counter() - w0], [time.thread_time() - c0]
    slow = wall[0] > 1.0
    n = max(min(cap, 3), min(cap, int(budget_s / wall[0])))
    if not slow:
        wall, cpu = [], []
    copies = [topo.obj_clone() for _ in range(n - len(wall))]
    gc.collect()
    for inst in copies:
        w0, c0 = time.perf_counter(), time.thread_time()
        result = demo.fit(host, inst, reqs, pci, limits)
        cpu.append(time.thread_time() - c0)
        wall.append(time.perf_counter() - w0)
    check = None
    if result is not None and len(topo.cells) > 1 and \
            topo.cells[0].cpu_policy == 'dedicated':
        check = demo._check(host, topo, result)   # nova-numa.md §3.3
    return {'median_us': statistics.median(wall) * 1e6,
            'cpu_median_us': statistics.median(cpu) * 1e6,
            'iterations': len(wall), 'fits': result is not None,
            'host_cells': [c.id for c in result.cells] if result else None,
            'inconsistent': check}


# --------------------------------------------------------------------------
# accel side
# --------------------------------------------------------------------------
def nodes_of(label):
    """'nodes:3,0' -> [3, 0]; '' -> None."""
    if not label.startswith('nodes:'):
        return None
    return [int(x) for x in label[len('nodes:'):].split(',')]


def run_accel(binary, repetitions, min_time):
    cmd = [binary, '--benchmark_format=json',
           '--benchmark_repetitions=%d' % repetitions,
           '--benchmark_report_aggregates_only=true',
           '--benchmark_min_time=%g' % min_time]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout
    doc = json.loads(out)
    scale = {'ns': 1e-3, 'us': 1.0, 'ms': 1e3, 's': 1e6}
    res = {}
    for b in doc['benchmarks']:
        name = b.get('run_name', b['name'])
        if b.get('error_occurred'):
            res[name] = {'error': b.get('error_message', 'error')}
            continue
        if b.get('aggregate_name', 'median') != 'median':
            continue
        k = scale[b.get('time_unit', 'ns')]
        res[name] = {'median_us': b['real_time'] * k,
                     'cpu_median_us': b['cpu_time'] * k,
                     'iterations': b.get('iterations'),
                     'fits': bool(b.get('fits', 0)),
                     'host_cells': nodes_of(b.get('label', ''))}
    return doc.get('context', {}), res


# --------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------
def fmt_us(v):
    """A time given in µs, in the unit that reads best."""
    if v is None:
        return '-'
    if v >= 1e6:
        return '%.2f s' % (v / 1e6)
    if v >= 1e4:
        return '%.1f ms' % (v / 1e3)
    if v < 1:
        return '{:.3f} µs'.format(v)
    if v < 10:
        return '{:.2f} µs'.format(v)
    return '{:.1f} µs'.format(v) if v < 100 else '{:,.0f} µs'.format(v)


def fit_word(b):
    return 'fit' if b else 'no fit'


def markdown_table(out):
    """The results as the table in docs/benchmarks.md."""
    lines = ['| benchmark | Nova median (calls) | accel median | accel CPU | '
             'ratio (wall) | ratio (CPU) | one-shot median | fit | '
             'host nodes |', '|---|---|---|---|---|---|---|---|---|']
    for rec in out:
        n, a, o = rec['nova'], rec['accel'], rec.get('accel_one_shot')
        if a is None or 'error' in a:
            continue
        ratio = rec.get('ratio')
        lines.append('| `%s` | %s | %s | %s | %s | %s | %s | %s | %s |' % (
            rec['name'],
            '%s (×%d)' % (fmt_us(n['median_us']), n['iterations'])
            if n else '–',
            fmt_us(a['median_us']), fmt_us(a['cpu_median_us']),
            '{:,.0f}×'.format(ratio) if ratio else '–',
            '{:,.0f}×'.format(rec['cpu_ratio']) if ratio else '–',
            fmt_us(o['median_us']) if o and 'error' not in o else '–',
            rec.get('agreement', ''), rec.get('nodes', '-')))
    return '\n'.join(lines) + '\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('place_bench', nargs='?', default='build/bench/place_bench')
    ap.add_argument('--json', help='write all results to this file')
    ap.add_argument('--markdown',
                    help='write the table of docs/benchmarks.md to this file')
    ap.add_argument('--iterations', type=int, default=1000,
                    help='most Nova calls per case (default 1000)')
    ap.add_argument('--budget', type=float, default=2.0,
                    help='seconds of Nova calls per case, within the caps')
    ap.add_argument('--repetitions', type=int, default=5,
                    help='place_bench repetitions (median taken)')
    ap.add_argument('--min-time', type=float, default=0.2,
                    help='place_bench seconds per repetition')
    ap.add_argument('--skip-slow', action='store_true',
                    help='skip the Nova cases that take seconds per call')
    ap.add_argument('--demo', default=DEMO, help='path to nova_fit_demo.py')
    args = ap.parse_args()

    if not os.access(args.place_bench, os.X_OK):
        sys.exit('%s not found; build it: cmake -S . -B build '
                 '-DCMAKE_BUILD_TYPE=Release && ninja -C build place_bench'
                 % args.place_bench)
    demo = load_demo(args.demo)
    from importlib.metadata import version
    nova_version = version('nova')
    print('nova %s, python %s; accel: %s' % (
        nova_version, platform.python_version(), args.place_bench))

    rows = cases()
    nova = {}
    # Other work on the machine skews both sides; the load is printed and saved with the run.
    load = {'nova_start': os.getloadavg()}
    print('  load average at the start of the Nova part: %.2f %.2f %.2f'
          % load['nova_start'])
    for row in rows:
        print('  nova %-40s' % bench_name(row), end='', flush=True)
        t0 = time.perf_counter()
        nova[bench_name(row)] = r = time_nova(demo, row, args.iterations,
                                              args.budget, args.skip_slow)
        print(' skipped' if r is None else ' %10s  x%-5d (%.1f s)' % (
            fmt_us(r['median_us']), r['iterations'],
            time.perf_counter() - t0))
    load['accel_start'] = os.getloadavg()
    print('  running %s ... (load average %.2f %.2f %.2f)'
          % ((args.place_bench,) + load['accel_start']), flush=True)
    context, accel = run_accel(args.place_bench, args.repetitions,
                               args.min_time)
    load['accel_end'] = os.getloadavg()
    print('  load average at the end: %.2f %.2f %.2f' % load['accel_end'])

    out, ratios, cpu_ratios, fit_ratios, problems = [], [], [], [], []
    hdr = '%-40s %10s %9s %8s %8s %9s %9s  %s' % (
        'case', 'Nova', 'accel', 'ratio', 'cpu', 'one-shot', 'nodes', 'fit')
    print('\n' + hdr + '\n' + '-' * len(hdr))
    for row in rows:
        name = bench_name(row)
        n, a = nova[name], accel.get(name)
        one_shot = accel.get(stateless_name(name))
        rec = {'name': name, 'case': row['case'], 'cells': row['cells'],
               'intended_fit': row['fits'], 'nova': n, 'accel': a,
               'accel_one_shot': one_shot}
        if a is None or 'error' in a:
            why = 'missing' if a is None else a['error']
            problems.append('%s: accel benchmark %s' % (name, why))
            print('%-40s accel benchmark %s' % (name, why))
            out.append(rec)
            continue
        ratio = cpu_ratio = None
        if n is None:
            agree = 'accel: %s (Nova not run)' % fit_word(a['fits'])
        elif n['fits'] == a['fits']:
            agree = 'both ' + fit_word(a['fits'])
        else:
            agree = '!!! DISAGREE: Nova %s, accel %s !!!' % (
                fit_word(n['fits']), fit_word(a['fits']))
            problems.append('%s: %s' % (name, agree))
        if n and n['inconsistent']:
            agree += ' (Nova answer invalid: %s)' % n['inconsistent']
        if n:
            ratio = n['median_us'] / a['median_us']
            cpu_ratio = n['cpu_median_us'] / a['cpu_median_us']
            ratios.append(ratio)
            cpu_ratios.append(cpu_ratio)
            if n['fits'] and a['fits']:
                fit_ratios.append(ratio)
        rec.update(ratio=ratio, cpu_ratio=cpu_ratio, agreement=agree)
        out.append(rec)
        # host node per guest cell; Nova's spread/first-fit and accel's
        # min-cost choice may differ legitimately, so this is information only
        nodes = '-'
        if a['host_cells'] is not None or (n and n['host_cells']):
            an = ','.join(map(str, a['host_cells'] or [])) or '-'
            nn = ','.join(map(str, n['host_cells'] or [])) if n else '?'
            nodes = an if an == nn else '%s/%s' % (nn, an)
        rec['nodes'] = nodes
        if one_shot and 'error' not in one_shot and \
                one_shot['fits'] != a['fits']:
            problems.append('%s: one-shot and prepared paths disagree' % name)
        print('%-40s %10s %9s %8s %8s %9s %9s  %s' % (
            name, fmt_us(n and n['median_us']), fmt_us(a['median_us']),
            '%.0fx' % ratio if ratio else '-',
            '%.0fx' % cpu_ratio if cpu_ratio else '-',
            fmt_us(one_shot['median_us'])
            if one_shot and 'error' not in one_shot else '-',
            nodes, agree))

    def geomean(xs):
        return math.exp(statistics.fmean(math.log(x) for x in xs)) if xs else None

    gm, gm_cpu, gm_fit = geomean(ratios), geomean(cpu_ratios), \
        geomean(fit_ratios)
    print('-' * len(hdr))
    print('accel = Place(HostState, request), state built before timing; '
          'ratio = Nova median / accel median (wall clock); cpu = the same '
          'for CPU time; one-shot = Place(host, usage, policy, request) '
          'median, state built in the call; nodes = host node per guest '
          'cell (Nova/accel when they differ)')
    if gm:
        print('geometric mean ratio over %d cases: %.0fx wall, %.0fx cpu; '
              'over the %d fitting cases: %.0fx; smallest %.1fx' % (
                  len(ratios), gm, gm_cpu, len(fit_ratios), gm_fit,
                  min(ratios)))
    for p in problems:
        print('!!! ' + p)
    if args.json:
        with open(args.json, 'w') as fh:
            json.dump({'nova_version': nova_version,
                       'python': platform.python_version(),
                       'place_bench': args.place_bench,
                       'accel_context': context, 'load_average': load,
                       'geomean_ratio': gm, 'geomean_cpu_ratio': gm_cpu,
                       'geomean_fit_ratio': gm_fit,
                       'problems': problems, 'rows': out}, fh, indent=1)
    if args.markdown:
        with open(args.markdown, 'w') as fh:
            fh.write(markdown_table(out))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
