# accel_nova_filter: a Nova scheduler host filter that asks `accel fleet serve` which of the
# candidate hosts can take the flavor (NUMA cells, pinned CPUs, hugepages, PCI devices on the
# right node), in one HTTP call for all candidates, in place of Nova's NUMATopologyFilter and
# PciPassthroughFilter, which fit the same thing in Python host by host.
#
# Install: copy this file onto every nova-scheduler host where Python finds it (e.g.
# /usr/lib/python3/dist-packages/accel_nova_filter.py on Debian), then in nova.conf:
#
#   [filter_scheduler]
#   available_filters = nova.scheduler.filters.all_filters
#   available_filters = accel_nova_filter.AccelFleetFilter
#   enabled_filters = ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter,AccelFleetFilter
#
#   [accel]
#   url = http://accel-scheduler.example:9470
#
# With every candidate the filter sends Nova's own view of the host's usage (HostState's NUMA
# cells and PCI pools), so accel fits the flavor on the host as nova-scheduler sees it, not on
# accel's store (which holds no claims for the VMs Nova places). deploy/openstack/README.md says
# what accel sees, what is approximated, and what Nova still does after filtering.
#
# Written against Nova 26 (Zed; Debian 12's python3-nova 2:26.2.2): filters are instantiated
# once per scheduler process by nova.scheduler.host_manager.HostManager and called through
# nova.filters.BaseFilterHandler.get_filtered_objects, once per instance of a request
# (index 0, 1, ...) with the hosts that passed the previous index; between two indexes the
# scheduler consumes the chosen host (HostState.consume_from_request: NUMA cells' pinned CPUs,
# cpu_usage and mempages, the PCI pools' free counts, num_instances + 1). nova-scheduler runs each
# request in its own green thread, so this filter keeps no per-request state on itself except in
# a WeakKeyDictionary keyed by the request's RequestSpec (it lives exactly as long as the
# request).
#
# Only the Python standard library is used for HTTP (urllib): nothing to install on a controller.

import base64
import json
import socket
import ssl
import urllib.error
import urllib.request
import weakref

from oslo_config import cfg
from oslo_config import types
from oslo_log import log as logging

import nova.conf
from nova.scheduler import filters
from nova.scheduler import utils as scheduler_utils

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF

# The response schema of POST /api/v1/filter (src/fleet/service.h, docs/fleet-api.yaml).
FILTER_SCHEMA = 'accel.fleet-filter/v1'
FILTER_PATH = '/api/v1/filter'

# The service reads request bodies up to 1 MiB (kMaxHandlerBody, src/http/server.cc)
# and answers 413 beyond. A busy host's usage is about 1 KiB (its pinned CPU ids), so a pass over
# 1000 hosts may not fit one body: hosts are sent in calls of at most this many bytes each.
MAX_BODY_BYTES = 512 * 1024

# Nova's smallest page size: the cell's ordinary memory, whose host reserve accel's host policy
# (reserved memory per node) models; hugepages reserved in nova.conf are sent as used.
BASE_PAGE_KB = 4

accel_group = cfg.OptGroup(
    'accel',
    title='accel fleet scheduler filter',
    help='How AccelFleetFilter (accel_nova_filter.py) reaches `accel fleet serve`.')

accel_opts = [
    cfg.ListOpt(
        'url',
        item_type=types.URI(schemes=['http', 'https']),
        default=['http://127.0.0.1:9470'],
        help='Base URL of `accel fleet serve` (its --web.listen-address), e.g. '
             'http://accel-scheduler.example:9470. Several replicas on one store may be '
             'listed, comma-separated: they are tried in order, the next one only when one '
             'cannot be reached or answers 5xx.'),
    cfg.FloatOpt(
        'timeout',
        default=5.0,
        min=0.1,
        help='Seconds to wait for each accel replica (connect and answer). One call answers '
             'for every candidate host; the service answers in milliseconds.'),
    cfg.StrOpt(
        'ca_file',
        help='PEM CA bundle that signed the service certificate (https URLs). Default: the '
             'system trust store.'),
    cfg.StrOpt(
        'cert_file',
        help='PEM client certificate, for a service whose web config sets '
             'client_auth_type: RequireAndVerifyClientCert.'),
    cfg.StrOpt(
        'key_file',
        help='PEM private key of cert_file (not encrypted).'),
    cfg.StrOpt(
        'username',
        help='Basic auth user (a basic_auth_users entry of the service web config file).'),
    cfg.StrOpt(
        'password',
        secret=True,
        help='Basic auth password of username.'),
    cfg.BoolOpt(
        'fail_open',
        default=False,
        help='What to do when no accel replica answers (unreachable, timeout, 5xx, 401, a '
             'reply that is not the filter schema). False (default): no host passes, so the '
             'request fails with NoValidHost rather than landing where the NUMA/PCI fit was '
             'never checked. True: every host passes, and nova-compute\'s own claim is the '
             'only NUMA/PCI check. Either way a warning says why. A flavor accel refuses '
             '(HTTP 400, e.g. an hw: key it does not support) always fails closed.'),
    cfg.StrOpt(
        'host_name',
        default='host',
        choices=[
            ('host', "HostState.host: the compute service's host name, [DEFAULT]host of "
                     "nova-compute, as `openstack compute service list` shows it"),
            ('nodename', 'HostState.nodename: the hypervisor_hostname of the compute node, '
                         'as `openstack hypervisor list` shows it'),
        ],
        help='Which Nova name must equal the host name in the accel fleet (`accel fleet host '
             'add --name`, or the agent\'s fleet.host).'),
    cfg.BoolOpt(
        'check_all_requests',
        default=False,
        help='False (default): ask accel only for requests that carry a NUMA topology or a PCI '
             'request (or whose flavor sets hw:cpu_policy, hw:numa_nodes, hw:mem_page_size or '
             'pci_passthrough:alias), the requests NUMATopologyFilter and '
             'PciPassthroughFilter act on; other requests pass every host, including hosts '
             'that are not in the accel fleet. True: ask for every request, so hosts outside '
             'the fleet take nothing.'),
    cfg.BoolOpt(
        'send_usage',
        default=True,
        help='True (default): send, with each candidate host, what nova-scheduler\'s HostState '
             'says is used on it (NUMA cells: pinned CPUs, shared vCPUs, pages; PCI pools: free '
             'devices), and accel fits the flavor on that usage; instances Nova places need no '
             'record in accel\'s store. A host whose HostState has no NUMA topology is answered '
             'from accel\'s store. False: accel answers from the claims in its store for every '
             'host (hosts whose usage accel records, e.g. placed with accel fleet place --claim).'),
]

CONF.register_group(accel_group)
CONF.register_opts(accel_opts, group=accel_group)


def list_opts():
    """The [accel] options, for oslo-config-generator."""
    return {accel_group: accel_opts}


# Flavor extra specs that make NUMATopologyFilter or PciPassthroughFilter act, for requests
# whose RequestSpec lacks numa_topology/pci_requests (see _needs_accel).
_NUMA_PCI_SPECS = ('hw:cpu_policy', 'hw:numa_nodes', 'hw:mem_page_size',
                   'pci_passthrough:alias')


class AccelUnavailable(Exception):
    """No replica gave a usable answer; the message says what each one did."""


class AccelRefused(Exception):
    """The service answered 400: it refuses the flavor or the aliases; the message is accel's."""


class _RequestState(object):
    """What one scheduling request has learnt from accel, across its instance indexes."""

    def __init__(self):
        # Hosts sent with Nova's usage: (accel host name, the usage document as sent) ->
        # (passed, accel's reason). A host the scheduler consumed has another usage document,
        # so it is asked again; an untouched one is not.
        self.by_usage = {}
        # Hosts answered from accel's store (no usage sent):
        # id(HostState) -> HostState.num_instances when the request first saw it: the
        # difference later is how many of this request's instances the scheduler put there.
        self.baseline = {}
        # accel host name -> the largest instance count accel said the host takes.
        self.fits = {}
        # accel host name -> (the smallest count accel refused, accel's reason).
        self.refused = {}
        # True once accel could not be reached and fail_open let every host pass.
        self.failed_open = False


class _Question(object):
    """One host's question to accel in this pass: count instances on its usage."""

    __slots__ = ('name', 'count', 'usage', 'usage_key')

    def __init__(self, name, count, usage, usage_key):
        self.name = name            # accel fleet host name
        self.count = count          # instances that must fit one after another
        self.usage = usage          # Nova's usage document (nova_usage.h), or None: the store's
        self.usage_key = usage_key  # usage as compact JSON (cache key and body), or None


class AccelFleetFilter(filters.BaseHostFilter):
    """Passes the hosts `accel fleet serve` says can take the request's flavor.

    One POST /api/v1/filter per scheduling pass for all candidate hosts (split only when the
    body would pass MAX_BODY_BYTES), each host sent with Nova's view of its usage (see
    _nova_usage). For a multi-instance request (openstack server create --min/--max), index k
    asks again only for the hosts whose usage changed since — those the scheduler just
    consumed — so N instances may spread over hosts that take one each, and a host that takes
    two gets two.

    Hosts answered from accel's store instead ([accel] send_usage = false, or a HostState
    without NUMA topology): a host passes index k when accel fits (instances of this request
    already there + 1) on it, one after another.
    """

    # A rebuild keeps the instance on its host with its resources: nothing to fit (as
    # NUMATopologyFilter and PciPassthroughFilter).
    RUN_ON_REBUILD = False

    # Run for every instance index; the per-request cache makes indexes after the first cost
    # one small call only when the scheduler consumed a host.
    run_filter_once_per_request = False

    def __init__(self):
        super(AccelFleetFilter, self).__init__()
        self._requests = weakref.WeakKeyDictionary()
        # HostState -> (numa_topology, PCI free counts, updated, usage, usage JSON): _usage_of.
        self._usage_cache = weakref.WeakKeyDictionary()
        self._alias_source = None
        self._aliases = []

    # -- nova.filters.BaseFilter ---------------------------------------------------------------

    def filter_all(self, filter_obj_list, spec_obj):
        hosts = list(filter_obj_list)
        if not hosts:
            return hosts
        if scheduler_utils.request_is_rebuild(spec_obj):
            return hosts
        if not CONF.accel.check_all_requests and not _needs_accel(spec_obj):
            return hosts
        _warn_about_port_requests(spec_obj)

        state = self._requests.get(spec_obj)
        if state is None:
            state = _RequestState()
            self._requests[spec_obj] = state

        # Each host's question: one instance on Nova's current usage (which holds this
        # request's instances already consumed there), or, from the store, this request's
        # instances already there + this one.
        questions = [self._question(h, state) for h in hosts]

        # Ask what is not known yet: index 0 every host, later indexes the hosts consumed since.
        to_ask = []
        asked = set()
        for q in questions:
            if q.usage is not None:
                known = (q.name, q.usage_key) in state.by_usage
            else:
                refused = state.refused.get(q.name)
                known = (state.fits.get(q.name, 0) >= q.count or
                         (refused is not None and refused[0] <= q.count))
            if known or (q.name, q.count, q.usage_key) in asked:
                continue
            asked.add((q.name, q.count, q.usage_key))
            to_ask.append(q)

        flavor = _flavor_document(spec_obj)
        for batch in _batches(to_ask):
            try:
                reply = self._ask(flavor, batch)
            except AccelRefused as e:
                LOG.error('AccelFleetFilter: accel refuses flavor %(flavor)s: %(why)s; no host '
                          'passes. Fix the flavor or [pci]alias so accel accepts it, or leave '
                          'this flavor to NUMATopologyFilter/PciPassthroughFilter.',
                          {'flavor': flavor['name'], 'why': e})
                return []
            except AccelUnavailable as e:
                if CONF.accel.fail_open:
                    LOG.warning('AccelFleetFilter: accel is unavailable (%(why)s); [accel] '
                                'fail_open is true, so %(n)d host(s) pass unchecked for flavor '
                                '%(flavor)s and only nova-compute\'s claim checks NUMA/PCI.',
                                {'why': e, 'n': len(batch), 'flavor': flavor['name']})
                    for q in batch:
                        _remember(state, q, True, 'accel unavailable, fail_open')
                    state.failed_open = True
                    continue
                LOG.warning('AccelFleetFilter: accel is unavailable (%(why)s); no host passes '
                            'for flavor %(flavor)s, so the request fails with NoValidHost. Set '
                            '[accel] fail_open = true to pass every host while accel is down.',
                            {'why': e, 'flavor': flavor['name']})
                return []
            passed = set(reply['hosts'])
            for q in batch:
                _remember(state, q, q.name in passed,
                          reply['rejected'].get(q.name, 'not in the answer'))

        out = []
        for h, q in zip(hosts, questions):
            if q.usage is not None:
                ok, why = state.by_usage.get((q.name, q.usage_key), (False, 'no answer'))
                if ok:
                    out.append(h)
                    continue
                LOG.debug('AccelFleetFilter: %(host)s rejected for flavor %(flavor)s (on '
                          'Nova\'s usage of the host, %(n)d instance(s) on it): %(why)s',
                          {'host': q.name, 'flavor': flavor['name'], 'n': h.num_instances,
                           'why': why})
                continue
            if state.fits.get(q.name, 0) >= q.count:
                out.append(h)
                continue
            count, why = state.refused.get(q.name, (q.count, 'no answer'))
            LOG.debug('AccelFleetFilter: %(host)s rejected for flavor %(flavor)s '
                      '(%(count)d instance(s) on it): %(why)s',
                      {'host': q.name, 'flavor': flavor['name'], 'count': count, 'why': why})
        return out

    def host_passes(self, host_state, spec_obj):
        # Only reached when something calls the per-host path directly; filter_all never does.
        return bool(self.filter_all([host_state], spec_obj))

    def _question(self, host_state, state):
        name = _accel_name(host_state)
        usage, usage_key = self._usage_of(host_state) if CONF.accel.send_usage else (None, None)
        if usage is not None:
            return _Question(name, 1, usage, usage_key)
        base = state.baseline.setdefault(id(host_state), host_state.num_instances)
        return _Question(name, max(0, host_state.num_instances - base) + 1, None, None)

    def _usage_of(self, host_state):
        """(_nova_usage(host_state), its compact JSON), remembered per HostState.

        Reading Nova's versioned objects costs about 50 us per host, a tenth of a second for a
        pass over 1000 hosts, while most hosts do not change between two requests. nova-scheduler
        never edits a HostState's NUMA topology in place: HostState.update (a new compute node
        report) and consume_from_request replace the object, and consume_from_request also moves
        HostState.updated. The PCI pools are edited in place, so they are compared by value.
        """
        topology = host_state.numa_topology
        free = _pci_free(host_state)
        updated = host_state.updated
        known = self._usage_cache.get(host_state)
        if (known is not None and known[0] is topology and known[1] == free and
                known[2] == updated):
            return known[3], known[4]
        usage = _nova_usage(host_state)
        # _nova_usage builds its dicts in a fixed key order, so equal usage gives an equal string
        # without sort_keys; the string is the request cache's key and goes into the body as is.
        usage_key = json.dumps(usage, separators=(',', ':')) if usage is not None else None
        self._usage_cache[host_state] = (topology, free, updated, usage, usage_key)
        return usage, usage_key

    # -- talking to accel ----------------------------------------------------------------------

    def _pci_aliases(self):
        """[pci]alias as JSON objects, parsed once per distinct option value."""
        source = tuple(CONF.pci.alias)
        if source != self._alias_source:
            aliases = []
            for text in source:
                try:
                    aliases.append(json.loads(text))
                except ValueError as e:
                    # Nova's own parser (nova.pci.request) refuses it too, at flavor use.
                    raise AccelRefused('[pci]alias %r is not JSON: %s' % (text, e))
            self._aliases = aliases
            self._alias_source = source
        return self._aliases

    def _ask(self, flavor, batch):
        """POSTs one filter request for `batch` (_Questions of one count, distinct names).

        Returns {'hosts': [...], 'rejected': {...}}. Raises AccelRefused on a 400 (accel's
        message), AccelUnavailable when no replica in [accel] url gave an answer of the filter
        schema.
        """
        doc = json.dumps({
            'flavor': flavor,
            'aliases': self._pci_aliases(),
            'hosts': [q.name for q in batch],
            'count': batch[0].count,
        }, separators=(',', ':'))
        # "usage": {name: document}, from the strings already made (a pass over 1000 busy hosts
        # would otherwise serialize about 0.5 MB twice).
        usage = ['%s:%s' % (json.dumps(q.name), q.usage_key) for q in batch if q.usage is not None]
        if usage:
            doc = doc[:-1] + ',"usage":{' + ','.join(usage) + '}}'
        body = doc.encode('utf-8')
        if not CONF.accel.url:
            raise AccelUnavailable('[accel] url is empty: set it to the accel fleet serve URL')
        errors = []
        for base in CONF.accel.url:
            url = base.rstrip('/') + FILTER_PATH
            try:
                return self._post(url, body)
            except AccelUnavailable as e:
                errors.append('%s: %s' % (url, e))
        raise AccelUnavailable('; '.join(errors))

    def _post(self, url, body):
        request = urllib.request.Request(url, data=body, method='POST')
        request.add_header('Content-Type', 'application/json')
        request.add_header('Accept', 'application/json')
        if CONF.accel.username:
            token = '%s:%s' % (CONF.accel.username, CONF.accel.password or '')
            request.add_header('Authorization',
                               'Basic ' + base64.b64encode(token.encode('utf-8')).decode('ascii'))
        context = None
        if url.startswith('https:'):
            try:
                context = ssl.create_default_context(cafile=CONF.accel.ca_file)
                if CONF.accel.cert_file:
                    context.load_cert_chain(CONF.accel.cert_file, CONF.accel.key_file)
            except (OSError, ssl.SSLError) as e:
                raise AccelUnavailable('TLS setup ([accel] ca_file/cert_file/key_file): %s' % e)
        try:
            with urllib.request.urlopen(request, timeout=CONF.accel.timeout,
                                        context=context) as response:
                text = response.read()
        except urllib.error.HTTPError as e:
            detail = _error_text(e)
            if e.code == 400:
                raise AccelRefused(detail)
            if e.code == 401:
                raise AccelUnavailable('401 unauthorized: check [accel] username and password')
            raise AccelUnavailable('HTTP %d: %s' % (e.code, detail))
        except urllib.error.URLError as e:
            raise AccelUnavailable(str(e.reason))
        except (socket.timeout, OSError) as e:
            raise AccelUnavailable(str(e) or e.__class__.__name__)
        try:
            doc = json.loads(text)
        except ValueError:
            raise AccelUnavailable('the answer is not JSON')
        if (not isinstance(doc, dict) or doc.get('schema') != FILTER_SCHEMA or
                not isinstance(doc.get('hosts'), list) or
                not isinstance(doc.get('rejected', {}), dict)):
            raise AccelUnavailable('the answer is not %s (an older accel?)' % FILTER_SCHEMA)
        doc.setdefault('rejected', {})
        return doc


def _accel_name(host_state):
    if CONF.accel.host_name == 'nodename':
        return host_state.nodename
    return host_state.host


def _remember(state, question, passed, why):
    """Records accel's answer to one question in the request's state."""
    q = question
    if q.usage is not None:
        state.by_usage[(q.name, q.usage_key)] = (passed, why)
    elif passed:
        state.fits[q.name] = max(state.fits.get(q.name, 0), q.count)
    else:
        old = state.refused.get(q.name)
        if old is None or q.count < old[0]:
            state.refused[q.name] = (q.count, why)


def _batches(questions):
    """Splits questions into calls: one count per call, a host name at most once per call (the
    usage map is keyed by name), and bodies below MAX_BODY_BYTES. Smallest counts first."""
    by_count = {}
    for q in questions:
        by_count.setdefault(q.count, []).append(q)
    out = []
    for count in sorted(by_count):
        pending = by_count[count]
        while pending:
            batch, names, size, later = [], set(), 0, []
            for q in pending:
                # The name twice (hosts and usage), quotes, separators, the usage document.
                cost = 2 * len(q.name) + 8 + (len(q.usage_key) if q.usage_key else 0)
                if q.name in names or (batch and size + cost > MAX_BODY_BYTES):
                    later.append(q)
                    continue
                batch.append(q)
                names.add(q.name)
                size += cost
            out.append(batch)
            pending = later
    return out


def _nova_usage(host_state):
    """What Nova holds on the host, as accel's filter API reads it (src/fleet/nova_usage.h), from
    nova-scheduler's HostState; None when the HostState has no NUMA topology (accel then answers
    from its store).

    cells: per NUMA cell with anything used — pinned_cpus (dedicated vCPUs, emulator threads,
        and the siblings an isolate-policy guest keeps idle); cpu_usage, which accel reads as
        pinned CPUs + shared vCPUs: Nova 26's NUMACell.cpu_usage counts only the shared
        (floating) vCPUs of NUMA guests (InstanceNUMACell.cpuset, unpinned since Victoria), so
        the pinned CPUs are added; mempages[].used, in pages, plus the pages nova.conf
        [DEFAULT]reserved_huge_pages keeps from guests (hugepage sizes only: the base-page
        reserve is accel's host policy).
    pci_free: Nova's PCI pools (PciDeviceStats) summed per vendor, product and NUMA node; a
        pool's count is its FREE devices: Nova takes a device out of its pool when an instance
        claims it, and the scheduler drops a pool whose last device it consumed, so the devices
        of the host in no pool are held (or not in [pci]device_spec: Nova cannot hand them out
        either). A pool of devices without a NUMA node (libvirt reports none; Nova's pool has
        numa_node None) is sent with numa_node null, and accel reads it as exactly those
        devices, never as "any node": hw:pci_numa_affinity_policy legacy and preferred may use
        them, required and socket may not. Left out when the HostState has no pci_stats.
    """
    topology = host_state.numa_topology
    if not topology or not topology.cells:
        return None
    cells = []
    for cell in topology.cells:
        pinned = sorted(cell.pinned_cpus or ())
        pages = []
        for p in cell.mempages or ():
            size = p.size_kb
            used = int(p.used or 0)
            if size != BASE_PAGE_KB and p.obj_attr_is_set('reserved'):
                used += int(p.reserved or 0)
            if used:
                pages.append({'size_kb': size, 'used': used})
        cpu_usage = int(cell.cpu_usage or 0) + len(pinned)
        if pinned or cpu_usage or pages:
            cells.append({'id': cell.id, 'pinned_cpus': pinned, 'cpu_usage': cpu_usage,
                          'mempages': pages})
    usage = {'cells': cells}
    free = _pci_free(host_state)
    if free is not None:
        usage['pci_free'] = [{'vendor_id': v, 'product_id': p, 'numa_node': n, 'free': c}
                             for (v, p, n), c in free]
    return usage


def _pci_free(host_state):
    """((vendor, product, numa node), free devices) of the HostState's PCI pools, summed and
    sorted; the numa node is None for the pool of devices without one. None without
    pci_stats."""
    if host_state.pci_stats is None:
        return None
    free = {}
    for pool in host_state.pci_stats.pools:
        key = (pool.get('vendor_id'), pool.get('product_id'), pool.get('numa_node'))
        free[key] = free.get(key, 0) + int(pool.get('count') or 0)
    return tuple(sorted(free.items(), key=lambda kv: repr(kv[0])))


def _flavor_document(spec_obj):
    """The request's flavor as accel reads it (placement/flavor.h): ram is Nova's memory_mb."""
    flavor = spec_obj.flavor
    return {
        'name': flavor.name,
        'vcpus': flavor.vcpus,
        'ram': flavor.memory_mb,
        'extra_specs': dict(flavor.extra_specs or {}),
    }


def _needs_accel(spec_obj):
    """True when NUMATopologyFilter or PciPassthroughFilter would act on the request."""
    if spec_obj.obj_attr_is_set('numa_topology') and spec_obj.numa_topology:
        return True
    if (spec_obj.obj_attr_is_set('pci_requests') and spec_obj.pci_requests and
            spec_obj.pci_requests.requests):
        return True
    specs = (spec_obj.flavor.extra_specs or {}) if spec_obj.obj_attr_is_set('flavor') else {}
    return any(key in specs for key in _NUMA_PCI_SPECS)


def _warn_about_port_requests(spec_obj):
    """accel is sent the flavor only: PCI devices asked for by Neutron ports are not in it."""
    if not (spec_obj.obj_attr_is_set('pci_requests') and spec_obj.pci_requests):
        return
    for request in spec_obj.pci_requests.requests or []:
        if request.obj_attr_is_set('alias_name') and request.alias_name is None:
            LOG.warning('AccelFleetFilter: the request asks for PCI devices of a Neutron port '
                        '(SR-IOV); accel checks only the flavor\'s pci_passthrough:alias. Keep '
                        'PciPassthroughFilter enabled after AccelFleetFilter for such ports.')
            return


def _error_text(http_error):
    """accel's {"error": "..."} text, or the status line."""
    try:
        doc = json.loads(http_error.read())
        if isinstance(doc, dict) and isinstance(doc.get('error'), str):
            return doc['error']
    except (ValueError, OSError):
        pass
    return '%d %s' % (http_error.code, http_error.reason)
