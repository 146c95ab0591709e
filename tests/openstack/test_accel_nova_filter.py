"""AccelFleetFilter (deploy/openstack/accel_nova_filter.py) with Nova's real scheduler classes
against a real `accel fleet serve`.

Run by Debian's /usr/bin/python3 with python3-nova (Nova 26, Zed) installed:

    ACCEL_BINARY=build/accel /usr/bin/python3 tests/openstack/test_accel_nova_filter.py -v

(tests/cli/nova_filter_test.cc runs it under ctest.) The filter is loaded the way nova-scheduler
loads it — HostManager reads [filter_scheduler] available_filters/enabled_filters — and driven
through HostManager.get_filtered_hosts, the call FilterScheduler makes per instance index, with
HostState.consume_from_request between indexes as SchedulerManager._schedule does. Request specs
are built as nova-api builds them (hardware.numa_get_constraints, pci.request.
get_pci_requests_from_flavor), HostStates with NUMA cells and PCI pools as Nova 26's libvirt
driver reports them (nova_host_state), so the filter sends Nova's usage of each host; hosts
mixing NUMA-local GPUs and GPUs without a NUMA node are fixtures changed here (DERIVED_HOSTS),
whose Nova pools for those GPUs have numa_node None as nova-compute reports them. The fleet
is made with the accel CLI in a temporary SQLite store; each test class starts its own service on
127.0.0.1:0. Bare HostStates (host_states: no NUMA topology) are answered from accel's store.

The comparisons with NUMATopologyFilter + PciPassthroughFilter need a service that reads
usage.pci_free (Nova's free PCI pools); against one that does not, they allow exactly the answers
that differ because accel cannot see the devices Nova's instances hold (assertSameAnswer).
"""

import copy
import json
import logging
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, 'deploy', 'openstack'))

from oslo_config import fixture as config_fixture  # noqa: E402

import nova.conf  # noqa: E402
from nova import objects  # noqa: E402

objects.register_all()

from nova.pci import request as pci_request  # noqa: E402
from nova.pci import stats as pci_stats  # noqa: E402
from nova.scheduler.filters import numa_topology_filter  # noqa: E402
from nova.scheduler.filters import pci_passthrough_filter  # noqa: E402
from nova.scheduler import host_manager  # noqa: E402
from nova.virt import hardware  # noqa: E402

import accel_nova_filter  # noqa: E402

CONF = nova.conf.CONF
ACCEL = os.environ.get('ACCEL_BINARY', os.path.join(REPO, 'build', 'accel'))
HOSTS = os.path.join(REPO, 'fixtures', 'hosts')
ALIASES = os.path.join(REPO, 'examples', 'flavors', 'aliases.json')
LOGGER = 'accel_nova_filter'
# assertLogs captures what the tests look at; nothing else goes to stderr.
logging.getLogger(LOGGER).addHandler(logging.NullHandler())

# bcrypt (cost 4) of 'nova-secret', made with python3-bcrypt; a constant so the test needs no
# bcrypt module.
NOVA_HASH = '$2b$04$hCX6ISo9PFy9fPgRzG3IV.G0.bttc8SPrOBSxwyzyP7KE1tHJQfIG'

# examples/flavors/gpu-1g.yaml: one H100, 16 pinned vCPUs (+1 emulator CPU), 128 x 1 GiB pages.
GPU_1G_SPECS = {
    'hw:cpu_policy': 'dedicated',
    'hw:mem_page_size': '1GB',
    'hw:emulator_threads_policy': 'isolate',
    'pci_passthrough:alias': 'h100:1',
    'hw:pci_numa_affinity_policy': 'required',
}


def read_json(path):
    with open(path) as f:
        return json.load(f)


def accel(*args):
    """Runs the accel CLI; fails the test run with its output when it fails."""
    p = subprocess.run([ACCEL] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    if p.returncode != 0:
        raise AssertionError('accel %s: exit %d\n%s' % (' '.join(args), p.returncode, p.stdout))
    return p.stdout


def die_with_parent():
    """In the child: SIGTERM when the test process dies (a killed test leaves no service)."""
    import ctypes
    import signal
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def closed_port():
    """A local port nothing listens on (bound, then closed)."""
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


class AccelService(object):
    """`accel fleet serve` on a temporary SQLite store, on 127.0.0.1:<free port>."""

    def __init__(self, workdir, store, web_config=None):
        self.log_path = os.path.join(workdir, 'serve-%d.log' % len(os.listdir(workdir)))
        args = [ACCEL, 'fleet', 'serve', '--store', store,
                '--web.listen-address', '127.0.0.1:0', '--refresh-ms', '100']
        if web_config:
            args += ['--web.config.file', web_config]
        self._log = open(self.log_path, 'w')
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT,
                                     preexec_fn=die_with_parent)
        self.port = None
        # A watchdog, not a timing assertion: the service logs its port at once.
        deadline = time.monotonic() + 30
        while self.port is None:
            with open(self.log_path) as f:
                text = f.read()
            if '(port ' in text:
                self.port = int(text.split('(port ', 1)[1].split(')', 1)[0])
            elif self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError('accel fleet serve did not start:\n' + text)
            else:
                time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def make_fleet(workdir):
    """The test fleet; returns its store URL.

    gpu-001  HGX H100, idle             takes 8 x gpu-1g
    gpu-002  HGX H200                   no H100 (alias h100 is 10de:2330)
    dev-001  devbox                     no H100
    gpu-003  HGX H100, maintenance      no new placements
    gpu-004  HGX H100, 7 x gpu-1g held  takes exactly 1 more
    """
    store = 'sqlite:' + os.path.join(workdir, 'fleet.db')
    h100 = os.path.join(HOSTS, 'hgx-h100.json')
    accel('fleet', 'host', 'add', '--store', store, '--topology', h100, '--name', 'gpu-001')
    accel('fleet', 'host', 'add', '--store', store, '--topology',
          os.path.join(HOSTS, 'hgx-h200.json'), '--name', 'gpu-002')
    accel('fleet', 'host', 'add', '--store', store, '--topology',
          os.path.join(HOSTS, 'devbox.json'), '--name', 'dev-001')
    accel('fleet', 'host', 'add', '--store', store, '--topology', h100, '--name', 'gpu-003',
          '--state', 'maintenance')
    accel('fleet', 'host', 'add', '--store', store, '--topology', h100, '--name', 'gpu-004',
          '--label', 'pool=busy')
    flavor = os.path.join(workdir, 'gpu-1g.json')
    with open(flavor, 'w') as f:
        json.dump({'name': 'gpu-1g', 'vcpus': 16, 'ram': 131072, 'extra_specs': GPU_1G_SPECS}, f)
    accel('fleet', 'place', '--store', store, '--flavor', flavor, '--aliases', ALIASES,
          '--where', 'pool=busy', '--count', '7', '--claim', '-o', 'json')
    return store


def nova_flavor(name, vcpus, memory_mb, extra_specs):
    return objects.Flavor(name=name, flavorid=name, vcpus=vcpus, memory_mb=memory_mb,
                          root_gb=0, ephemeral_gb=0, swap=0, extra_specs=dict(extra_specs))


def request_spec(flavor, num_instances=1, **kwargs):
    """A RequestSpec as nova-api makes it (nova/compute/api.py _validate_and_build_base_options):
    NUMA constraints and PCI requests from the flavor, the requests with the flavor's
    hw:pci_numa_affinity_policy in place of the alias's numa_policy."""
    image = objects.ImageMeta.from_dict({})
    return objects.RequestSpec(
        flavor=flavor,
        num_instances=num_instances,
        image=image,
        numa_topology=hardware.numa_get_constraints(flavor, image),
        pci_requests=pci_request.get_pci_requests_from_flavor(
            flavor, affinity_policy=hardware.get_pci_numa_policy_constraint(flavor, image)),
        ignore_hosts=None, force_hosts=None, force_nodes=None,
        requested_destination=None,
        scheduler_hints=kwargs.pop('scheduler_hints', {}),
        instance_uuid='00000000-0000-4000-8000-%012d' % 0,
        **kwargs)


def host_states(*names, **nodenames):
    """Nova HostStates named `names` (host = nodename unless nodenames maps it)."""
    out = []
    for name in names:
        h = host_manager.HostState(name, nodenames.get(name, name), 'cell-1')
        h.uuid = 'uuid-' + name
        out.append(h)
    return out


class NovaFilterTestCase(unittest.TestCase):
    """Nova config with AccelFleetFilter enabled and a HostManager that loaded it."""

    url = None  # set by setUpClass of each subclass

    def setUp(self):
        self.config = self.useFixture(config_fixture.Config(CONF))
        aliases = read_json(ALIASES)
        self.config.config(group='pci', alias=[json.dumps(a) for a in aliases])
        self.config.config(group='filter_scheduler', available_filters=[
            'nova.scheduler.filters.all_filters', 'accel_nova_filter.AccelFleetFilter'])
        self.config.config(group='filter_scheduler', enabled_filters=[
            'ComputeFilter', 'AccelFleetFilter'])
        self.config.config(group='accel', url=[self.url], timeout=10)
        # HostManager as nova-scheduler makes it, without its database reads.
        with mock.patch.object(host_manager.HostManager, 'refresh_cells_caches'), \
                mock.patch.object(host_manager.HostManager, '_init_aggregates'), \
                mock.patch.object(host_manager.HostManager, '_init_instance_info'):
            self.manager = host_manager.HostManager()
        self.filter = [f for f in self.manager.enabled_filters
                       if f.__class__.__name__ == 'AccelFleetFilter'][0]
        # Count the HTTP calls.
        self.calls = []
        real_post = self.filter._post

        def counting_post(url, body):
            self.calls.append(json.loads(body))
            return real_post(url, body)
        self.filter._post = counting_post

    def useFixture(self, fixture):
        fixture.setUp()
        self.addCleanup(fixture.cleanUp)
        return fixture

    def passing(self, hosts, spec, index=0):
        """HostManager.get_filtered_hosts; ComputeFilter passes these (no service record)."""
        with mock.patch('nova.scheduler.filters.compute_filter.ComputeFilter.host_passes',
                        return_value=True):
            return [h.host for h in self.manager.get_filtered_hosts(hosts, spec, index)]

    def gpu_1g(self, num_instances=1):
        return request_spec(nova_flavor('gpu-1g', 16, 131072, GPU_1G_SPECS), num_instances)


class ServiceTestCase(NovaFilterTestCase):
    """One plain-HTTP service for the class."""

    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix='accel-nova-filter-')
        cls.addClassCleanup(shutil.rmtree, cls.workdir, True)
        cls.store = make_fleet(cls.workdir)
        cls.service = AccelService(cls.workdir, cls.store)
        cls.addClassCleanup(cls.service.stop)
        cls.url = 'http://127.0.0.1:%d' % cls.service.port


class TestFit(ServiceTestCase):

    def test_loaded_from_nova_conf(self):
        self.assertIsInstance(self.filter, accel_nova_filter.AccelFleetFilter)

    def test_hosts_that_fit_pass_others_are_rejected_with_accel_reasons(self):
        hosts = host_states('gpu-001', 'gpu-002', 'dev-001', 'gpu-003', 'gpu-004', 'nova-only')
        with self.assertLogs(LOGGER, level='DEBUG') as logs:
            self.assertEqual(self.passing(hosts, self.gpu_1g()), ['gpu-001', 'gpu-004'])
        text = '\n'.join(logs.output)
        self.assertIn("gpu-002 rejected for flavor gpu-1g (1 instance(s) on it): PCI alias 'h100'",
                      text)
        self.assertIn('dev-001 rejected', text)
        self.assertIn('gpu-003 rejected for flavor gpu-1g (1 instance(s) on it): host is '
                      'maintenance', text)
        self.assertIn('nova-only rejected for flavor gpu-1g (1 instance(s) on it): not in the '
                      'accel fleet', text)

    def test_one_call_for_all_candidates_with_the_flavor_and_aliases(self):
        hosts = host_states('gpu-001', 'gpu-002', 'dev-001', 'gpu-003', 'gpu-004')
        self.passing(hosts, self.gpu_1g())
        self.assertEqual(len(self.calls), 1)
        call = self.calls[0]
        self.assertEqual(call['hosts'], ['gpu-001', 'gpu-002', 'dev-001', 'gpu-003', 'gpu-004'])
        self.assertEqual(call['count'], 1)
        self.assertEqual(call['flavor'], {'name': 'gpu-1g', 'vcpus': 16, 'ram': 131072,
                                          'extra_specs': GPU_1G_SPECS})
        self.assertEqual(call['aliases'], read_json(ALIASES))

    def test_num_instances_spread_and_stack_as_the_scheduler_consumes_hosts(self):
        # SchedulerManager._schedule for 3 instances: filter index k over the hosts that passed
        # index k-1, then consume the chosen host. gpu-004 takes one more, gpu-001 eight.
        spec = self.gpu_1g(num_instances=3)
        hosts = host_states('gpu-001', 'gpu-002', 'gpu-004')
        by_name = {h.host: h for h in hosts}

        self.assertEqual(self.passing(hosts, spec, 0), ['gpu-001', 'gpu-004'])
        by_name['gpu-004'].consume_from_request(spec)          # instance 0 -> gpu-004
        survivors = [by_name['gpu-001'], by_name['gpu-004']]
        with self.assertLogs(LOGGER, level='DEBUG') as logs:
            self.assertEqual(self.passing(survivors, spec, 1), ['gpu-001'])
        self.assertIn('gpu-004 rejected for flavor gpu-1g (2 instance(s) on it)',
                      '\n'.join(logs.output))
        by_name['gpu-001'].consume_from_request(spec)          # instance 1 -> gpu-001
        self.assertEqual(self.passing([by_name['gpu-001']], spec, 2), ['gpu-001'])
        by_name['gpu-001'].consume_from_request(spec)          # instance 2 -> gpu-001

        # Index 0 asked for every host once; later indexes only for the host just consumed.
        self.assertEqual([(c['hosts'], c['count']) for c in self.calls],
                         [(['gpu-001', 'gpu-002', 'gpu-004'], 1),
                          (['gpu-004'], 2),
                          (['gpu-001'], 2)])

    def test_num_instances_beyond_a_host_stop_there(self):
        spec = self.gpu_1g(num_instances=9)
        (h,) = host_states('gpu-001')
        for index in range(8):
            self.assertEqual(self.passing([h], spec, index), ['gpu-001'], index)
            h.consume_from_request(spec)
        self.assertEqual(self.passing([h], spec, 8), [])
        self.assertEqual(self.calls[-1]['count'], 9)

    def test_requests_are_independent(self):
        a, b = self.gpu_1g(num_instances=2), self.gpu_1g(num_instances=2)
        (h,) = host_states('gpu-004')
        self.assertEqual(self.passing([h], a, 0), ['gpu-004'])
        h.consume_from_request(a)
        # b starts after a consumed gpu-004 in the scheduler's memory; accel holds no claim for
        # a's instance, so b's first instance is asked for as one.
        self.assertEqual(self.passing([h], b, 0), ['gpu-004'])
        self.assertEqual(self.passing([h], a, 1), [])

    def test_nodename_as_the_fleet_name(self):
        self.config.config(group='accel', host_name='nodename')
        hosts = host_states('compute-17', 'compute-18',
                            **{'compute-17': 'gpu-001', 'compute-18': 'gpu-002'})
        self.assertEqual(self.passing(hosts, self.gpu_1g()), ['compute-17'])
        self.assertEqual(self.calls[0]['hosts'], ['gpu-001', 'gpu-002'])

    def test_plain_flavors_pass_without_asking_unless_check_all_requests(self):
        plain = request_spec(nova_flavor('m1.small', 2, 2048, {}))
        hosts = host_states('gpu-001', 'nova-only')
        self.assertEqual(self.passing(hosts, plain), ['gpu-001', 'nova-only'])
        self.assertEqual(self.calls, [])
        self.config.config(group='accel', check_all_requests=True)
        self.assertEqual(self.passing(host_states('gpu-001', 'nova-only'), plain), ['gpu-001'])
        self.assertEqual(len(self.calls), 1)

    def test_rebuild_passes_without_asking(self):
        spec = request_spec(nova_flavor('gpu-1g', 16, 131072, GPU_1G_SPECS),
                            scheduler_hints={'_nova_check_type': ['rebuild']})
        self.assertEqual(self.passing(host_states('gpu-003'), spec), ['gpu-003'])
        self.assertEqual(self.calls, [])

    def test_a_flavor_accel_refuses_fails_closed_with_accels_reason(self):
        # An alias nova.conf does not define: accel answers 400 whatever fail_open says.
        self.config.config(group='accel', fail_open=True)
        flavor = nova_flavor('gpu-a100', 16, 131072, {'hw:cpu_policy': 'dedicated',
                                                      'pci_passthrough:alias': 'a100:1'})
        # Built by hand: nova-api's get_pci_requests_from_flavor would refuse the alias itself.
        spec = objects.RequestSpec(flavor=flavor, num_instances=1, ignore_hosts=None,
                                   force_hosts=None, force_nodes=None,
                                   requested_destination=None, scheduler_hints={},
                                   instance_uuid='00000000-0000-4000-8000-000000000001')
        with self.assertLogs(LOGGER, level='ERROR') as logs:
            self.assertEqual(self.passing(host_states('gpu-001'), spec), [])
        self.assertIn("accel refuses flavor gpu-a100: request body: flavor (flavor gpu-a100)",
                      logs.output[0])
        self.assertIn('a100', logs.output[0])

    def test_second_replica_answers_when_the_first_is_down(self):
        self.config.config(group='accel',
                           url=['http://127.0.0.1:%d' % closed_port(), self.url])
        with self.assertNoLogsAtWarning():
            self.assertEqual(self.passing(host_states('gpu-001', 'gpu-002'), self.gpu_1g()),
                             ['gpu-001'])

    def assertNoLogsAtWarning(self):
        test = self

        class Guard(object):
            def __enter__(self):
                self.cm = test.assertLogs(LOGGER, level='DEBUG')
                self.logs = self.cm.__enter__()

            def __exit__(self, *exc):
                self.cm.__exit__(None, None, None)
                bad = [r for r in self.logs.records if r.levelname in ('WARNING', 'ERROR')]
                test.assertEqual(bad, [])
        return Guard()


class TestServiceDown(NovaFilterTestCase):
    """No service at [accel] url: fail closed by default, fail open when asked."""

    @classmethod
    def setUpClass(cls):
        cls.url = 'http://127.0.0.1:%d' % closed_port()

    def test_fail_closed_rejects_every_host_and_says_why(self):
        with self.assertLogs(LOGGER, level='WARNING') as logs:
            self.assertEqual(self.passing(host_states('gpu-001', 'gpu-002'), self.gpu_1g()), [])
        self.assertIn('accel is unavailable', logs.output[0])
        self.assertIn(self.url + '/api/v1/filter', logs.output[0])
        self.assertIn('Connection refused', logs.output[0])
        self.assertIn('no host passes', logs.output[0])
        self.assertIn('fail_open', logs.output[0])

    def test_fail_open_passes_every_host_and_says_why(self):
        self.config.config(group='accel', fail_open=True)
        spec = self.gpu_1g(num_instances=2)
        hosts = host_states('gpu-001', 'gpu-002')
        with self.assertLogs(LOGGER, level='WARNING') as logs:
            self.assertEqual(self.passing(hosts, spec, 0), ['gpu-001', 'gpu-002'])
        self.assertIn('fail_open is true, so 2 host(s) pass unchecked', logs.output[0])
        hosts[0].consume_from_request(spec)
        with self.assertLogs(LOGGER, level='WARNING'):
            self.assertEqual(self.passing(hosts, spec, 1), ['gpu-001', 'gpu-002'])


class TestTlsAndBasicAuth(NovaFilterTestCase):
    """The service behind TLS and basic auth (the web config file of `accel exporter`)."""

    @classmethod
    def setUpClass(cls):
        if not shutil.which('openssl'):
            raise unittest.SkipTest('tool missing: openssl (Debian package openssl)')
        cls.workdir = tempfile.mkdtemp(prefix='accel-nova-filter-tls-')
        cls.addClassCleanup(shutil.rmtree, cls.workdir, True)
        cls.store = make_fleet(cls.workdir)
        cls.cert = os.path.join(cls.workdir, 'tls.crt')
        key = os.path.join(cls.workdir, 'tls.key')
        subprocess.run(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt',
                        'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
                        '-subj', '/CN=accel-test', '-addext', 'subjectAltName=IP:127.0.0.1',
                        '-keyout', key, '-out', cls.cert],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        web = os.path.join(cls.workdir, 'web.yml')
        with open(web, 'w') as f:
            f.write('tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n'
                    'basic_auth_users:\n  nova: %s\n' % NOVA_HASH)
        cls.service = AccelService(cls.workdir, cls.store, web)
        cls.addClassCleanup(cls.service.stop)
        cls.url = 'https://127.0.0.1:%d' % cls.service.port

    def setUp(self):
        super(TestTlsAndBasicAuth, self).setUp()
        self.config.config(group='accel', ca_file=self.cert, username='nova',
                           password='nova-secret')

    def test_right_password_passes(self):
        self.assertEqual(self.passing(host_states('gpu-001', 'gpu-002'), self.gpu_1g()),
                         ['gpu-001'])

    def test_wrong_password_is_unavailable_and_fails_closed(self):
        self.config.config(group='accel', password='wrong')
        with self.assertLogs(LOGGER, level='WARNING') as logs:
            self.assertEqual(self.passing(host_states('gpu-001'), self.gpu_1g()), [])
        self.assertIn('401 unauthorized: check [accel] username and password', logs.output[0])

    def test_no_password_is_unavailable(self):
        self.config.config(group='accel', username=None, password=None, fail_open=True)
        with self.assertLogs(LOGGER, level='WARNING') as logs:
            self.assertEqual(self.passing(host_states('gpu-001'), self.gpu_1g()), ['gpu-001'])
        self.assertIn('401', logs.output[0])

    def test_unknown_ca_is_unavailable(self):
        self.config.config(group='accel', ca_file=None)
        with self.assertLogs(LOGGER, level='WARNING') as logs:
            self.assertEqual(self.passing(host_states('gpu-001'), self.gpu_1g()), [])
        self.assertIn('CERTIFICATE_VERIFY_FAILED', logs.output[0])



def parse_cpus(text):
    """'0-3,8' -> {0, 1, 2, 3, 8} (the cpulist format of accel host JSON)."""
    out = set()
    for part in text.split(','):
        if '-' in part:
            lo, hi = part.split('-')
            out.update(range(int(lo), int(hi) + 1))
        elif part:
            out.add(int(part))
    return out


def split_policy(host_json, shared_cores=4):
    """A disjoint [compute]cpu_shared_set / cpu_dedicated_set for this hardware, as an operator
    sets them since Train: the first `shared_cores` cores (all their threads) of every NUMA node
    float shared vCPUs, every other CPU is for pinning. Returns (shared, dedicated) CPU sets."""
    shared, dedicated = set(), set()
    for node in host_json['numa_nodes']:
        for i, core in enumerate(node['cores']):
            (shared if i < shared_cores else dedicated).update(parse_cpus(core))
    return shared, dedicated


def cpulist(cpus):
    """{0, 1, 2, 5} -> '0-2,5'."""
    out, run = [], []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append('%d-%d' % (run[0], run[-1]) if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append('%d-%d' % (run[0], run[-1]) if len(run) > 1 else str(run[0]))
    return ','.join(out)


def nova_numa_node(dev):
    """A device's NUMA node as nova-compute reports it: None when the host JSON says -1 (libvirt
    writes no <numa node=.../> for a device whose sysfs numa_node is -1, so Nova's PciDevice and
    its pool carry numa_node None)."""
    node = dev.get('numa_node')
    return node if node is not None and node >= 0 else None


def nova_pci_pools(host_json, aliases, limit=None):
    """The PCI pools nova-compute reports for this hardware with a [pci]device_spec that allows
    every device of a type-PCI alias (at most `limit` devices per pool when given): one pool per
    vendor, product and NUMA node (None for the devices without one), in the order of their first
    device, as PciDeviceStats.add_device makes them."""
    wanted = {(a['vendor_id'], a['product_id']) for a in aliases
              if a.get('device_type', 'type-PCI') == 'type-PCI'}
    counts = {}
    for dev in host_json['pci']:
        key = (dev.get('vendor_id'), dev.get('device_id'), nova_numa_node(dev))
        if key[:2] in wanted:
            counts[key] = counts.get(key, 0) + 1
    return objects.PciDevicePoolList(objects=[objects.PciDevicePool.from_dict({
        'vendor_id': v, 'product_id': p, 'numa_node': n,
        'count': c if limit is None else min(c, limit), 'dev_type': 'type-PCI'})
        for (v, p, n), c in counts.items()])


def nova_host_state(name, host_json, aliases, split=None, pci_limit=None, reserved_1g=0):
    """The HostState nova-scheduler would hold for an idle compute node of this hardware.

    As Nova 26's libvirt driver reports it (nova/virt/libvirt/driver.py
    _get_host_numa_topology): with split=None neither [compute]cpu_dedicated_set nor
    cpu_shared_set is set, and every CPU is both shared and dedicated (accel's default policy is
    the same); with split=(shared, dedicated) the cells' cpuset/pcpuset are those sets. No
    reserved pages but `reserved_1g` 1 GiB pages per cell ([DEFAULT]reserved_huge_pages), and a
    [pci]device_spec that allows every device of a type-PCI alias (pci_limit: at most that many
    per pool).
    """
    cells = []
    for node in host_json['numa_nodes']:
        cpus = parse_cpus(node['cpus'])
        shared, dedicated = split if split else (cpus, cpus)
        # A node whose CPUs are not in one package: the libvirt driver leaves the cell's socket
        # None (and Nova's socket PCI NUMA affinity policy then has no fallback on the host).
        socket = node['package'] if node['package'] >= 0 else None
        cells.append(objects.NUMACell(
            id=node['id'], socket=socket, cpuset=cpus & shared,
            pcpuset=cpus & dedicated, memory=node['memory_kib'] // 1024, memory_usage=0,
            cpu_usage=0, pinned_cpus=set(), siblings=[parse_cpus(c) for c in node['cores']],
            mempages=[objects.NUMAPagesTopology(
                size_kb=p['size_kib'], total=p['total'], used=0,
                reserved=reserved_1g if p['size_kib'] == 1048576 else 0)
                for p in node['hugepages']],
            network_metadata=objects.NetworkMetadata(physnets=set(), tunneled=False)))
    topology = objects.NUMATopology(cells=cells)
    h = host_manager.HostState(name, name, 'cell-1')
    h.uuid = 'uuid-' + name
    h.numa_topology = topology
    h.pci_stats = pci_stats.PciDeviceStats(topology, nova_pci_pools(host_json, aliases,
                                                                     pci_limit))
    h.cpu_allocation_ratio = 4.0     # accel's default (placement/usage.h)
    h.ram_allocation_ratio = 1.0
    h.limits = {}
    return h


def read_host(sku):
    """The host JSON of a fixture SKU, or of a DERIVED_HOSTS one."""
    if sku in DERIVED_HOSTS:
        return DERIVED_HOSTS[sku]()
    return read_json(os.path.join(HOSTS, sku + '.json'))


def topology_file(workdir, sku):
    """A file `accel fleet host add --topology` reads for `sku` (derived ones written to workdir)."""
    if sku not in DERIVED_HOSTS:
        return os.path.join(HOSTS, sku + '.json')
    path = os.path.join(workdir, sku + '.json')
    with open(path, 'w') as f:
        json.dump(read_host(sku), f, indent=1)
    return path


def derived_host(fixture, numa_less=(), drop=(), no_package=()):
    """A fixture machine changed as real ones come: the PCI devices at `numa_less` addresses with
    no NUMA node (numa_node -1: firmware without _PXM for their root ports), those at `drop`
    gone, the NUMA nodes `no_package` in no single package (package -1)."""
    def build():
        host = read_json(os.path.join(HOSTS, fixture + '.json'))
        host['pci'] = [d for d in host['pci'] if d['address'] not in drop]
        for dev in host['pci']:
            if dev['address'] in numa_less:
                dev['numa_node'] = -1
        for node in host['numa_nodes']:
            if node['id'] in no_package:
                node['package'] = -1
        return host
    return build


# HGX H100 GPUs in address order: 1b 43 52 61 on node 0, 9d c3 d1 df on node 1.
# EPYC NPS4 MI300X: one GPU per node 0-7 (04 24 44 64 on socket 0, 84 a4 c4 e4 on socket 1).
DERIVED_HOSTS = {
    # The user's host (issue 24): two GPUs on node 0, two without a NUMA node.
    'hgx-h100-2local-2numaless': derived_host(
        'hgx-h100', numa_less={'0000:9d:00.0', '0000:c3:00.0'},
        drop={'0000:52:00.0', '0000:61:00.0', '0000:d1:00.0', '0000:df:00.0'}),
    # Two GPUs per node and four without a node, in address order between and after them.
    'hgx-h100-numaless': derived_host(
        'hgx-h100', numa_less={'0000:52:00.0', '0000:61:00.0', '0000:d1:00.0', '0000:df:00.0'}),
    # Four nodes per socket, every other node's GPU without a NUMA node: the socket policy
    # reaches the GPUs of the socket's other nodes, never the NUMA-less ones.
    'epyc-nps4-mi300x-numaless': derived_host(
        'epyc-nps4-mi300x',
        numa_less={'0000:24:00.0', '0000:64:00.0', '0000:a4:00.0', '0000:e4:00.0'}),
    # The same with node 7 in no single package: Nova's cell socket None, no socket fallback.
    'epyc-nps4-mi300x-numaless-nosocket': derived_host(
        'epyc-nps4-mi300x',
        numa_less={'0000:24:00.0', '0000:64:00.0', '0000:a4:00.0', '0000:e4:00.0'},
        no_package={7}),
}


def load_flavor(name):
    """examples/flavors/NAME.yaml as a Nova flavor."""
    try:
        import yaml
    except ImportError:
        raise unittest.SkipTest('tool missing: python3-yaml (Debian package python3-yaml)')
    with open(os.path.join(REPO, 'examples', 'flavors', name + '.yaml')) as f:
        doc = yaml.safe_load(f)
    return nova_flavor(doc['name'], doc['vcpus'], doc['ram'],
                       {k: str(v) for k, v in doc['extra_specs'].items()})


def service_reads_pci_free(url):
    """Whether the service applies a host's usage.pci_free (Nova's free PCI pools).

    An idle HGX H100 (SKU name 'hgx-h100' in the fleet) sent with no free PCI device must refuse
    gpu-1g; a service that ignores pci_free sees its 8 H100s free."""
    body = json.dumps({
        'flavor': {'name': 'gpu-1g', 'vcpus': 16, 'ram': 131072, 'extra_specs': GPU_1G_SPECS},
        'aliases': read_json(ALIASES), 'hosts': ['hgx-h100'], 'count': 1,
        'usage': {'hgx-h100': {'cells': [], 'pci_free': []}}}).encode('utf-8')
    request = urllib.request.Request(url + '/api/v1/filter', data=body, method='POST')
    request.add_header('Content-Type', 'application/json')
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())['hosts'] == []


class NovaComparisonTestCase(NovaFilterTestCase):
    """A service on a fleet of one host per fixture SKU (legacy CPU sets: accel's default
    policy) and the same SKUs with disjoint shared/dedicated CPU sets ('split-' + SKU), and
    the comparison with Nova's NUMATopologyFilter + PciPassthroughFilter."""

    SKUS = ['hgx-h100', 'hgx-h200', 'epyc-nps4-mi300x', 'gaudi2-8hpu', 'devbox']

    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix='accel-nova-filter-same-')
        cls.addClassCleanup(shutil.rmtree, cls.workdir, True)
        cls.store = 'sqlite:' + os.path.join(cls.workdir, 'fleet.db')
        for sku in cls.SKUS:
            topology = topology_file(cls.workdir, sku)
            accel('fleet', 'host', 'add', '--store', cls.store, '--topology', topology,
                  '--name', sku)
            shared, dedicated = split_policy(read_host(sku))
            policy = os.path.join(cls.workdir, 'split-%s.json' % sku)
            with open(policy, 'w') as f:
                json.dump({'cpu_shared_set': cpulist(shared),
                           'cpu_dedicated_set': cpulist(dedicated)}, f)
            accel('fleet', 'host', 'add', '--store', cls.store, '--topology', topology,
                  '--name', 'split-' + sku, '--policy', policy)
        cls.service = AccelService(cls.workdir, cls.store)
        cls.addClassCleanup(cls.service.stop)
        cls.url = 'http://127.0.0.1:%d' % cls.service.port
        # Until the service applies pci_free (src/fleet/nova_usage.cc), accel cannot see the
        # devices Nova's instances hold; the comparisons then allow exactly the answers that
        # differ for that reason alone (see assertSameAnswer).
        cls.pci_free_read = service_reads_pci_free(cls.url)

    def setUp(self):
        super(NovaComparisonTestCase, self).setUp()
        self.aliases = read_json(ALIASES)
        self.numa_filter = numa_topology_filter.NUMATopologyFilter()
        self.pci_filter = pci_passthrough_filter.PciPassthroughFilter()
        self.pci_blind = 0  # answers that differed only by Nova's PCI usage

    def host(self, sku, split=False, **kwargs):
        """An idle Nova HostState of `sku`, named as the fleet host of the same policy."""
        host_json = read_host(sku)
        if split:
            return nova_host_state('split-' + sku, host_json, self.aliases,
                                   split=split_policy(host_json), **kwargs)
        return nova_host_state(sku, host_json, self.aliases, **kwargs)

    def nova_passes(self, h, spec):
        return (self.numa_filter.host_passes(h, spec) and
                self.pci_filter.host_passes(h, spec))

    def assertSameAnswer(self, h, spec, index, what):
        """AccelFleetFilter passes h for instance `index` exactly when Nova's filters do.
        Returns Nova's answer."""
        nova = self.nova_passes(h, spec)
        ours = self.passing([h], spec, index) == [h.host]
        if ours != nova and not self.pci_free_read and ours and self._nova_passes_pci_blind(
                h, spec):
            self.pci_blind += 1
            return nova
        self.assertEqual(ours, nova, '%s: accel %s, Nova %s' % (what, ours, nova))
        return nova

    def _nova_passes_pci_blind(self, h, spec):
        """Nova's answer if none of its PCI devices were in use (what an accel that ignores
        pci_free sees): the host with its pools as nova-compute first reported them."""
        blind = copy.copy(h)
        blind.pci_stats = pci_stats.PciDeviceStats(
            h.numa_topology, nova_pci_pools(read_host(h.host.replace('split-', '')),
                                            self.aliases))
        return self.nova_passes(blind, spec)

    def hugepage_flavors(self):
        """Every example flavor, a 1 GiB-page flavor per accelerator alias, and shared-vCPU
        NUMA flavors: all with explicit page sizes (see TestKnownDifferences for small pages)."""
        out = [load_flavor(name) for name in ['gpu-1g', 'gpu-4-2cell', 'isolate', 'mixed',
                                              'numa2']]
        for alias in ['h200', 'mi300x', 'gaudi2']:
            specs = dict(GPU_1G_SPECS, **{'pci_passthrough:alias': alias + ':1'})
            out.append(nova_flavor(alias + '-1g', 16, 131072, specs))
        out.append(nova_flavor('gpu-8-2cell', 64, 524288, {
            'hw:cpu_policy': 'dedicated', 'hw:numa_nodes': '2', 'hw:mem_page_size': '1GB',
            'pci_passthrough:alias': 'h100:8'}))
        # Small enough for the devbox (16 cores, 8 GiB of 2M pages, one RTX 4090).
        out.append(nova_flavor('rtx4090-2m', 4, 4096, {
            'hw:cpu_policy': 'dedicated', 'hw:mem_page_size': '2MB',
            'pci_passthrough:alias': 'rtx4090:1'}))
        out.append(nova_flavor('pinned-2m', 4, 1024, {
            'hw:cpu_policy': 'dedicated', 'hw:mem_page_size': '2MB',
            'hw:emulator_threads_policy': 'isolate'}))
        out.append(nova_flavor('shared-1g', 24, 16384, {
            'hw:numa_nodes': '1', 'hw:mem_page_size': '1GB'}))
        out.append(nova_flavor('shared-2m', 6, 2048, {'hw:mem_page_size': '2MB'}))
        return out


class TestSameAnswerAsNovasOwnFilters(NovaComparisonTestCase):
    """AccelFleetFilter, sent Nova's usage, passes exactly the hosts Nova's NUMATopologyFilter +
    PciPassthroughFilter pass, on hosts Nova has partly filled (accel's store holds no claim
    for them): each accepted instance is consumed with Nova's own
    HostState.consume_from_request (its NUMA fit, PCI apply_requests)."""

    def test_every_sku_and_flavor_instance_by_instance(self):
        # One request of up to 64 instances per flavor and idle host: index k compares Nova's
        # k-th fit with accel's answer on the host as the k instances before left it.
        placed = {}
        for flavor in self.hugepage_flavors():
            if flavor.name.startswith('shared-'):
                continue  # the legacy CPU sets: see TestKnownDifferences
            for sku in self.SKUS:
                h = self.host(sku)
                spec = request_spec(flavor, num_instances=64)
                n = 0
                while n < 64 and self.assertSameAnswer(
                        h, spec, n, '%s on %s, instance %d' % (flavor.name, sku, n + 1)):
                    h.consume_from_request(spec)
                    n += 1
                placed[(flavor.name, sku)] = n
        # The comparison is not vacuous: every SKU takes some flavor, several take many.
        for sku in self.SKUS:
            self.assertTrue(any(placed[(f, s)] for f, s in placed if s == sku), sku)
        self.assertEqual(placed[('gpu-1g', 'hgx-h100')], 8)
        self.assertEqual(placed[('gpu-8-2cell', 'hgx-h100')], 1)
        # Nova's usage went with every host (no store claims exist for these hosts).
        self.assertTrue(all('usage' in c and c['count'] == 1 for c in self.calls))
        if os.environ.get('ACCEL_NOVA_FILTER_SHOW'):
            for key in sorted(placed):
                print('%-12s %-17s %d' % (key[0], key[1], placed[key]))

    def test_random_mixes_on_partly_used_hosts(self):
        # Hosts filled by Nova with a seeded random mix of flavors and request sizes: each
        # request's instances one index after another, as the scheduler runs them, until the
        # host refuses 4 requests in a row, twice per SKU. Disjoint CPU sets (split-*), so
        # shared and pinned guests share a host as Nova and accel both allow.
        rng = random.Random(13)
        # Not hw:cpu_thread_policy=isolate: with cpu_dedicated_set, Nova 26 asks Placement for
        # hosts without HW_CPU_HYPERTHREADING, so its filters never see an SMT host for it (and
        # refuse it if they do, nova/virt/hardware.py bug #1889633), while accel fits it by
        # keeping the siblings idle, as Nova does with legacy CPU sets.
        flavors = [f for f in self.hugepage_flavors()
                   if f.extra_specs.get('hw:cpu_thread_policy') != 'isolate']
        accepted = rejected = 0
        for sku in self.SKUS * 2:
            h = self.host(sku, split=True)
            # The flavors this SKU takes at all (the others only test the aliases).
            fitting = [f for f in flavors if self.nova_passes(h, request_spec(f))]
            self.assertTrue(fitting, sku)
            refusals = steps = 0
            while refusals < 4 and steps < 80:
                flavor = rng.choice(fitting)
                spec = request_spec(flavor, num_instances=rng.choice([1, 1, 2, 3]))
                for index in range(spec.num_instances):
                    steps += 1
                    what = '%s on split-%s, step %d, instance %d of %d' % (
                        flavor.name, sku, steps, index + 1, spec.num_instances)
                    if not self.assertSameAnswer(h, spec, index, what):
                        refusals += 1
                        rejected += 1
                        break
                    refusals = 0
                    accepted += 1
                    h.consume_from_request(spec)
        # Both answers were exercised many times (the hosts end up full).
        self.assertGreater(accepted, 100)
        self.assertGreater(rejected, 50)
        if not self.pci_free_read:
            # The allowance was needed, so the probe and the comparison agree.
            self.assertGreater(self.pci_blind, 0)


class TestNovaUsage(NovaComparisonTestCase):
    """What the filter sends: Nova's HostState usage, and what accel makes of it."""

    def gpu_1g_consumed(self, n, **kwargs):
        h = self.host('hgx-h100', **kwargs)
        spec = self.gpu_1g(num_instances=n)
        for index in range(n):
            self.assertEqual(self.passing([h], spec, index), ['hgx-h100'])
            h.consume_from_request(spec)
        return h

    def test_usage_is_novas_cells_and_free_pools(self):
        h = self.gpu_1g_consumed(3, reserved_1g=2)
        self.assertEqual(self.passing([h], self.gpu_1g()), ['hgx-h100'])
        usage = accel_nova_filter._nova_usage(h)
        cells = {c.id: c for c in h.numa_topology.cells}
        self.assertTrue(usage['cells'])
        for cell in usage['cells']:
            nova = cells[cell['id']]
            self.assertEqual(cell['pinned_cpus'], sorted(nova.pinned_cpus))
            # Nova 26 counts only floating vCPUs in cpu_usage; accel's cpu_usage holds the
            # pinned CPUs too (nova_usage.h).
            self.assertEqual(cell['cpu_usage'], nova.cpu_usage + len(nova.pinned_cpus))
            pages = {p.size_kb: p for p in nova.mempages}
            # gpu-1g instances hold 128 1 GiB pages each; 2 more per cell are reserved.
            self.assertEqual(cell['mempages'], [
                {'size_kb': 1048576, 'used': pages[1048576].used + 2}])
            self.assertEqual(pages[1048576].used % 128, 0)
        pinned = sum(len(c['pinned_cpus']) for c in usage['cells'])
        self.assertEqual(pinned, 3 * 17)  # 16 vCPUs + 1 isolated emulator thread each
        # 8 H100s, 4 per node; Nova's pools hold the 5 left free.
        h100 = [p for p in usage['pci_free'] if p['product_id'] == '2330']
        self.assertEqual(sum(p['free'] for p in h100), 5)
        self.assertEqual(sorted(p['numa_node'] for p in h100), [0, 1])
        # Exactly that document went to accel for the last instance.
        self.assertEqual(self.calls[-1]['usage'], {'hgx-h100': usage})
        self.assertEqual(self.calls[-1]['count'], 1)

    def test_an_idle_cell_is_left_out(self):
        h = self.host('hgx-h100')
        self.assertEqual(accel_nova_filter._nova_usage(h)['cells'], [])
        h.numa_topology = None
        self.assertIsNone(accel_nova_filter._nova_usage(h))

    def test_index_k_asks_only_for_the_host_just_consumed(self):
        spec = self.gpu_1g(num_instances=3)
        a, b = self.host('hgx-h100'), self.host('hgx-h200')
        self.assertEqual(self.passing([a, b], spec, 0), ['hgx-h100'])
        a.consume_from_request(spec)
        self.assertEqual(self.passing([a], spec, 1), ['hgx-h100'])
        a.consume_from_request(spec)
        self.assertEqual(self.passing([a], spec, 2), ['hgx-h100'])
        self.assertEqual([(c['hosts'], c['count'], sorted(c['usage'])) for c in self.calls],
                         [(['hgx-h100', 'hgx-h200'], 1, ['hgx-h100', 'hgx-h200']),
                          (['hgx-h100'], 1, ['hgx-h100']),
                          (['hgx-h100'], 1, ['hgx-h100'])])
        # Each later call carries the host as the instances before left it.
        pinned = [sum(len(c['pinned_cpus']) for c in call['usage']['hgx-h100']['cells'])
                  for call in self.calls]
        self.assertEqual(pinned, [0, 17, 34])

    def test_an_unchanged_host_is_not_asked_again(self):
        spec = self.gpu_1g(num_instances=2)
        h = self.host('hgx-h100')
        self.assertEqual(self.passing([h], spec, 0), ['hgx-h100'])
        self.assertEqual(self.passing([h], spec, 1), ['hgx-h100'])  # nothing consumed
        self.assertEqual(len(self.calls), 1)

    def test_usage_is_rebuilt_only_when_the_host_changes(self):
        h = self.host('hgx-h100')
        built = []
        real = accel_nova_filter._nova_usage

        def counting(host_state):
            built.append(host_state.host)
            return real(host_state)
        with mock.patch.object(accel_nova_filter, '_nova_usage', counting):
            self.passing([h], self.gpu_1g())
            self.passing([h], self.gpu_1g())            # another request, same host
            self.assertEqual(built, ['hgx-h100'])
            h.consume_from_request(self.gpu_1g())        # a new topology object
            self.passing([h], self.gpu_1g())
            self.assertEqual(len(built), 2)
            h.pci_stats.pools[0]['count'] -= 1           # pools are edited in place
            self.passing([h], self.gpu_1g())
            self.assertEqual(len(built), 3)
        self.assertEqual(self.calls[-1]['usage']['hgx-h100'], real(h))

    def test_devices_outside_novas_pools_are_held(self):
        # [pci]device_spec allows 1 H100 per node: Nova hands out 2, and so does accel.
        h = self.host('hgx-h100', pci_limit=1)
        spec = self.gpu_1g(num_instances=4)
        n = 0
        while self.assertSameAnswer(h, spec, n, 'gpu-1g instance %d' % (n + 1)):
            h.consume_from_request(spec)
            n += 1
        self.assertEqual(n, 2)
        if not self.pci_free_read:
            self.assertEqual(self.pci_blind, 1)

    def test_large_passes_are_split_below_the_body_limit(self):
        hosts = [self.host(sku) for sku in self.SKUS]
        spec = self.gpu_1g(num_instances=2)
        for h in hosts:  # every host partly used, so every usage document is long
            h.consume_from_request(request_spec(load_flavor('isolate')))
        one_call = self.passing(hosts, spec, 0)
        self.assertEqual(len(self.calls), 1)
        sizes = [len(json.dumps(accel_nova_filter._nova_usage(h), separators=(',', ':')))
                 for h in hosts]
        limit = max(sizes) + 100  # about one host per call
        self.calls = []
        with mock.patch.object(accel_nova_filter, 'MAX_BODY_BYTES', limit):
            self.assertEqual(self.passing(hosts, request_spec(spec.flavor, 2), 0), one_call)
        self.assertGreaterEqual(len(self.calls), 3)
        self.assertEqual(sorted(n for c in self.calls for n in c['hosts']), sorted(self.SKUS))
        for call in self.calls:
            self.assertLessEqual(len(json.dumps(call['usage'], separators=(',', ':'))), limit)


class TestUsageReplacesTheStore(ServiceTestCase):
    """Nova's usage replaces accel's claims for the hosts it is sent with."""

    def test_novas_view_wins_and_send_usage_false_keeps_the_store(self):
        # gpu-004 holds 7 gpu-1g claims in accel's store; Nova's HostState says it is idle.
        h = nova_host_state('gpu-004', read_host('hgx-h100'), read_json(ALIASES))
        spec = self.gpu_1g(num_instances=8)
        for index in range(8):
            self.assertEqual(self.passing([h], spec, index), ['gpu-004'], index)
            h.consume_from_request(spec)
        self.config.config(group='accel', send_usage=False)
        h = nova_host_state('gpu-004', read_host('hgx-h100'), read_json(ALIASES))
        spec = self.gpu_1g(num_instances=2)
        self.assertEqual(self.passing([h], spec, 0), ['gpu-004'])
        h.consume_from_request(spec)
        self.assertEqual(self.passing([h], spec, 1), [])
        self.assertNotIn('usage', self.calls[-1])
        self.assertEqual(self.calls[-1]['count'], 2)


POLICIES = ['required', 'legacy', 'preferred', 'socket']  # Nova 26: PCINUMAAffinityPolicy.ALL


def affinity_flavor(policy, alias, count, vcpus=8, gib=16, cells=1, floating=False):
    """`count` devices of `alias` under hw:pci_numa_affinity_policy `policy` (which overrides the
    alias's numa_policy): pinned vCPUs and 1 GiB pages over `cells` guest cells, or (floating) a
    guest with no NUMA topology at all."""
    specs = {'pci_passthrough:alias': '%s:%d' % (alias, count),
             'hw:pci_numa_affinity_policy': policy}
    if not floating:
        specs.update({'hw:cpu_policy': 'dedicated', 'hw:mem_page_size': '1GB'})
        if cells > 1:
            specs['hw:numa_nodes'] = str(cells)
    name = '%s-%s%d-%s' % (policy, alias, count, 'float' if floating else '%dc%dg' % (cells, gib))
    return nova_flavor(name, vcpus, gib * 1024, specs)


class TestDevicesWithoutNumaNode(NovaComparisonTestCase):
    """Hosts mixing NUMA-local GPUs and GPUs without a NUMA node (nova-compute reports the latter
    in PCI pools with numa_node None, the filter sends them as null, and accel holds exactly
    those devices free: src/fleet/nova_usage.h): accel passes what Nova's NUMATopologyFilter +
    PciPassthroughFilter pass under every PCI NUMA affinity policy, instance by instance, for
    requests of several instances consumed one after another as the scheduler does."""

    # hgx-h100 too: service_reads_pci_free asks for it.
    SKUS = ['hgx-h100', 'hgx-h100-2local-2numaless', 'hgx-h100-numaless',
            'epyc-nps4-mi300x-numaless', 'epyc-nps4-mi300x-numaless-nosocket']
    MIXED = SKUS[1:]

    def alias(self, sku):
        return 'mi300x' if 'mi300x' in sku else 'h100'

    def request(self, h, spec, what):
        """Every instance of `spec` on h, as SchedulerManager._schedule: index k compared with
        Nova on the host as the k before left it, the chosen host consumed. Returns how many
        instances both placed (they stop at the first both refuse)."""
        for index in range(spec.num_instances):
            if not self.assertSameAnswer(h, spec, index, '%s, instance %d of %d' % (
                    what, index + 1, spec.num_instances)):
                return index
            h.consume_from_request(spec)
        return spec.num_instances

    def fill(self, sku, flavor, per_request=3):
        """Requests of `per_request` instances of `flavor` on an idle `sku` until one places
        nothing; returns the instances placed."""
        h = self.host(sku)
        total = 0
        while total < 32:
            placed = self.request(h, request_spec(flavor, num_instances=per_request),
                                  '%s on %s after %d' % (flavor.name, sku, total))
            total += placed
            if placed < per_request:
                break
        return total

    def free_pools(self, h):
        return [(p['numa_node'], p['free']) for p in accel_nova_filter._nova_usage(h)['pci_free']]

    def test_novas_null_pool_is_sent_as_null(self):
        h = self.host('hgx-h100-numaless')
        self.assertEqual(sorted(self.free_pools(h), key=repr), [(0, 2), (1, 2), (None, 4)])
        body = json.dumps(accel_nova_filter._nova_usage(h))
        self.assertIn('"numa_node": null, "free": 4', body)

    def test_users_case_socket_refuses_the_second_instance(self):
        # Two node-0 GPUs and two without a NUMA node; gpu:2 under socket, two instances in one
        # request. The first takes the node-0 pair; for the second no allowed node has 2 free
        # (NUMA-less devices are not on any socket), so Nova refuses the host — and so must
        # accel, where a null pool read as "any node" freed the node-0 pair again.
        h = self.host('hgx-h100-2local-2numaless')
        self.assertEqual(self.free_pools(h), [(0, 2), (None, 2)])
        spec = request_spec(affinity_flavor('socket', 'h100', 2), num_instances=2)
        self.assertTrue(self.assertSameAnswer(h, spec, 0, 'socket gpu:2, instance 1'))
        h.consume_from_request(spec)
        self.assertEqual(self.free_pools(h), [(None, 2)])
        with self.assertLogs(LOGGER, level='DEBUG') as logs:
            self.assertFalse(self.assertSameAnswer(h, spec, 1, 'socket gpu:2, instance 2'))
        self.assertIn('hgx-h100-2local-2numaless rejected for flavor socket-h100', '\n'.join(logs.output))
        self.assertEqual(self.calls[-1]['usage']['hgx-h100-2local-2numaless']['pci_free'],
                         [{'vendor_id': '10de', 'product_id': '2330', 'numa_node': None, 'free': 2}])
        # required refuses it too; legacy and preferred take the NUMA-less pair.
        for policy, second in [('required', False), ('legacy', True), ('preferred', True)]:
            h = self.host('hgx-h100-2local-2numaless')
            spec = request_spec(affinity_flavor(policy, 'h100', 2), num_instances=2)
            self.assertEqual(self.request(h, spec, '%s gpu:2' % policy), 2 if second else 1)

    def test_mirror_case_legacy_takes_numa_less_devices_from_the_other_node(self):
        # gpu:2 under legacy with 512 GiB of 1 GiB pages (a node has 768): one instance per
        # node. The first lands on node 0 (most devices) with the node-0 pair; the second must
        # run on node 1, where legacy takes the NUMA-less pair — a null pool read as "any node"
        # left the node-0 pair free instead and refused it.
        h = self.host('hgx-h100-2local-2numaless')
        spec = request_spec(affinity_flavor('legacy', 'h100', 2, gib=512), num_instances=3)
        self.assertTrue(self.assertSameAnswer(h, spec, 0, 'legacy big, instance 1'))
        h.consume_from_request(spec)
        used = {c.id: sum(p.used for p in c.mempages if p.size_kb == 1048576)
                for c in h.numa_topology.cells}
        self.assertEqual(used, {0: 512, 1: 0})
        self.assertEqual(self.free_pools(h), [(None, 2)])
        self.assertTrue(self.assertSameAnswer(h, spec, 1, 'legacy big, instance 2'))
        h.consume_from_request(spec)
        self.assertEqual(self.free_pools(h), [])
        self.assertFalse(self.assertSameAnswer(h, spec, 2, 'legacy big, instance 3'))
        # socket and required refuse the second; preferred takes it.
        for policy, placed in [('socket', 1), ('required', 1), ('preferred', 2)]:
            h = self.host('hgx-h100-2local-2numaless')
            spec = request_spec(affinity_flavor(policy, 'h100', 2, gib=512), num_instances=3)
            self.assertEqual(self.request(h, spec, '%s big' % policy), placed, policy)

    def test_every_policy_fills_mixed_hosts_as_nova_does(self):
        # Per policy and mixed SKU, requests of 3 (and of 2) instances until the host is full,
        # for 1 and 2 devices on one guest cell, 2 devices over two cells, and a guest with no
        # NUMA topology (any device, whatever the policy).
        placed = {}
        for sku in self.MIXED:
            alias = self.alias(sku)
            for policy in POLICIES:
                shapes = [dict(count=1), dict(count=2), dict(count=2, vcpus=16, gib=32, cells=2),
                          dict(count=1, vcpus=4, gib=4, floating=True)]
                for shape in shapes:
                    flavor = affinity_flavor(policy, alias, **shape)
                    for per_request in (3, 2):
                        n = self.fill(sku, flavor, per_request)
                        placed[(sku, flavor.name, per_request)] = n
        show = os.environ.get('ACCEL_NOVA_FILTER_SHOW')
        if show:
            for key in sorted(placed):
                print('%-36s %-28s %d %d' % (key[0], key[1], key[2], placed[key]))

        def got(sku, name):
            return placed[(sku, name, 3)]
        # 2 GPUs per node and 4 without a node: required and socket (one node per socket) take
        # the local pairs, legacy and preferred the NUMA-less pairs too.
        self.assertEqual([got('hgx-h100-numaless', '%s-h100%d-1c16g' % (p, 2)) for p in POLICIES],
                         [2, 4, 4, 2])
        self.assertEqual([got('hgx-h100-numaless', '%s-h100%d-1c16g' % (p, 1)) for p in POLICIES],
                         [4, 8, 8, 4])
        # One GPU on every other node of 4-node sockets, the others without a node: socket
        # reaches the GPUs of the socket's other nodes (so two GPUs for one cell), never the
        # NUMA-less ones; with node 7 in no single package Nova has no socket fallback.
        self.assertEqual([got('epyc-nps4-mi300x-numaless', '%s-mi300x1-1c16g' % p)
                          for p in POLICIES], [4, 8, 8, 4])
        # legacy: 3, not 4 — Nova takes a NUMA-less GPU with the node-0 one, then both of an
        # instance's GPUs from the NUMA-less pool when it comes first in the pool list, and the
        # last two local GPUs, on nodes 4 and 6, are no pair for one cell (accel answers each
        # instance on the pools Nova left, so it agrees).
        self.assertEqual([got('epyc-nps4-mi300x-numaless', '%s-mi300x2-1c16g' % p)
                          for p in POLICIES], [0, 3, 4, 2])
        self.assertEqual([got('epyc-nps4-mi300x-numaless-nosocket', '%s-mi300x2-1c16g' % p)
                          for p in POLICIES], [0, 3, 4, 0])
        # No NUMA topology: any device under every policy.
        for sku in self.MIXED:
            total = 4 if sku == 'hgx-h100-2local-2numaless' else 8
            for p in POLICIES:
                self.assertEqual(got(sku, '%s-%s1-float' % (p, self.alias(sku))), total)

    def test_random_mixes_of_policies_on_mixed_hosts(self):
        # Seeded random requests of 2-3 instances, any policy and shape, on each mixed SKU (plain
        # and with disjoint CPU sets) until it refuses 4 requests in a row; the answer compared
        # at every instance.
        rng = random.Random(24)
        accepted = rejected = 0
        for i, sku in enumerate(self.MIXED * 2):
            split = i >= len(self.MIXED)
            h = self.host(sku, split=split)
            alias = self.alias(sku)
            refusals = steps = 0
            while refusals < 4 and steps < 60:
                policy = rng.choice(POLICIES)
                cells = rng.choice([1, 1, 2])
                flavor = affinity_flavor(policy, alias, rng.choice([1, 1, 2, 3]),
                                         vcpus=cells * rng.choice([2, 4, 8]),
                                         gib=cells * rng.choice([4, 16, 64]), cells=cells)
                spec = request_spec(flavor, num_instances=rng.choice([2, 3]))
                what = '%s on %s%s, step %d' % (flavor.name, 'split-' if split else '', sku, steps)
                n = self.request(h, spec, what)
                steps += n + (1 if n < spec.num_instances else 0)
                accepted += n
                if n < spec.num_instances:
                    rejected += 1
                    refusals = refusals + 1 if n == 0 else 0
                else:
                    refusals = 0
        self.assertGreater(accepted, 40)
        self.assertGreater(rejected, 20)


class TestKnownDifferences(NovaComparisonTestCase):
    """Where accel is deliberately stricter than Nova 26 (deploy/openstack/README.md)."""

    def test_floating_vcpus_do_not_share_pinned_cpus(self):
        # Legacy CPU sets (neither cpu_shared_set nor cpu_dedicated_set): Nova lets a NUMA
        # guest's floating vCPUs count on CPUs other guests have pinned; accel does not.
        h = self.host('devbox')
        pinned = nova_flavor('pinned-28', 28, 1024, {'hw:cpu_policy': 'dedicated',
                                                     'hw:mem_page_size': '2MB'})
        h.consume_from_request(request_spec(pinned))
        shared = request_spec(nova_flavor('shared-8', 8, 1024, {'hw:mem_page_size': '2MB'}))
        self.assertTrue(self.nova_passes(h, shared))
        with self.assertLogs(LOGGER, level='DEBUG') as logs:
            self.assertEqual(self.passing([h], shared), [])
        self.assertIn('4 shared CPUs, a cell with 8 shared vCPUs needs as many',
                      '\n'.join(logs.output))
        # With disjoint sets the two agree.
        h = self.host('devbox', split=True)
        pinned = nova_flavor('pinned-20', 20, 1024, {'hw:cpu_policy': 'dedicated',
                                                     'hw:mem_page_size': '2MB'})
        h.consume_from_request(request_spec(pinned))
        self.assertSameAnswer(h, request_spec(nova_flavor('shared-8', 8, 1024, {
            'hw:mem_page_size': '2MB'})), 0, 'shared-8 on split-devbox')

    def test_small_page_memory_counts_against_free_small_pages(self):
        # A NUMA guest without hw:mem_page_size: Nova checks it against the cell's small-page
        # total and its memory (hugepages included) less what its guests use; accel against
        # the small pages left. An HGX H100 node has 224 GiB of 4 KiB pages.
        h = self.host('hgx-h100')
        spec = request_spec(nova_flavor('numa-128g', 8, 131072, {'hw:numa_nodes': '1'}),
                            num_instances=16)
        ours = nova = 0
        while self.nova_passes(h, spec):
            if self.passing([h], spec, nova) == ['hgx-h100']:
                ours += 1
            h.consume_from_request(spec)
            nova += 1
        self.assertEqual(ours, 2)  # one per node: 224 GiB of small pages
        self.assertGreater(nova, 2)


if __name__ == '__main__':
    unittest.main()
