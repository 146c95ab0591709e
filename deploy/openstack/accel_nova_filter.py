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
# deploy/openstack/README.md says what accel sees and what Nova still does after filtering.
#
# Written against Nova 26 (Zed; Debian 12's python3-nova 2:26.2.2): filters are instantiated
# once per scheduler process by nova.scheduler.host_manager.HostManager and called through
# nova.filters.BaseFilterHandler.get_filtered_objects, once per instance of a request
# (index 0, 1, ...) with the hosts that passed the previous index; between two indexes the
# scheduler consumes the chosen host (HostState.consume_from_request, which adds 1 to
# HostState.num_instances). nova-scheduler runs each request in its own green thread, so this
# filter keeps no per-request state on itself except in a WeakKeyDictionary keyed by the
# request's RequestSpec (it lives exactly as long as the request).
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
        # id(HostState) -> HostState.num_instances when the request first saw it: the
        # difference later is how many of this request's instances the scheduler put there.
        self.baseline = {}
        # accel host name -> the largest instance count accel said the host takes.
        self.fits = {}
        # accel host name -> (the smallest count accel refused, accel's reason).
        self.refused = {}
        # True once accel could not be reached and fail_open let every host pass.
        self.failed_open = False


class AccelFleetFilter(filters.BaseHostFilter):
    """Passes the hosts `accel fleet serve` says can take the request's flavor.

    One POST /api/v1/filter per scheduling pass, for all candidate hosts at once. For a
    multi-instance request (openstack server create --min/--max), index k asks again only for
    the hosts this request already put instances on: a host passes index k when accel fits
    (instances of this request already there + 1) on it, one after another — so N instances
    may spread over hosts that take one each, and a host that takes two gets two.
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

        # How many instances each host must take: those of this request already consumed
        # there, plus this one.
        need = {}
        for h in hosts:
            base = state.baseline.setdefault(id(h), h.num_instances)
            need[id(h)] = max(0, h.num_instances - base) + 1

        # Ask for the hosts whose answer at that count is not known yet, one call per count
        # (index 0: one call, count 1, every host; later: the hosts just consumed).
        to_ask = {}
        for h in hosts:
            name = _accel_name(h)
            n = need[id(h)]
            if state.fits.get(name, 0) >= n:
                continue
            refused = state.refused.get(name)
            if refused is not None and refused[0] <= n:
                continue
            to_ask.setdefault(n, [])
            if name not in to_ask[n]:
                to_ask[n].append(name)

        flavor = _flavor_document(spec_obj)
        for count in sorted(to_ask):
            names = to_ask[count]
            try:
                reply = self._ask(flavor, names, count)
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
                                {'why': e, 'n': len(names), 'flavor': flavor['name']})
                    for name in names:
                        state.fits[name] = max(state.fits.get(name, 0), count)
                    state.failed_open = True
                    continue
                LOG.warning('AccelFleetFilter: accel is unavailable (%(why)s); no host passes '
                            'for flavor %(flavor)s, so the request fails with NoValidHost. Set '
                            '[accel] fail_open = true to pass every host while accel is down.',
                            {'why': e, 'flavor': flavor['name']})
                return []
            passed = set(reply['hosts'])
            for name in names:
                if name in passed:
                    state.fits[name] = max(state.fits.get(name, 0), count)
                else:
                    why = reply['rejected'].get(name, 'not in the answer')
                    old = state.refused.get(name)
                    if old is None or count < old[0]:
                        state.refused[name] = (count, why)

        out = []
        for h in hosts:
            name = _accel_name(h)
            n = need[id(h)]
            if state.fits.get(name, 0) >= n:
                out.append(h)
                continue
            count, why = state.refused.get(name, (n, 'no answer'))
            LOG.debug('AccelFleetFilter: %(host)s rejected for flavor %(flavor)s '
                      '(%(count)d instance(s) on it): %(why)s',
                      {'host': name, 'flavor': flavor['name'], 'count': count, 'why': why})
        return out

    def host_passes(self, host_state, spec_obj):
        # Only reached when something calls the per-host path directly; filter_all never does.
        return bool(self.filter_all([host_state], spec_obj))

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

    def _ask(self, flavor, names, count):
        """POSTs one filter request; returns {'hosts': [...], 'rejected': {...}}.

        Raises AccelRefused on a 400 (accel's message), AccelUnavailable when no replica in
        [accel] url gave an answer of the filter schema.
        """
        body = json.dumps({
            'flavor': flavor,
            'aliases': self._pci_aliases(),
            'hosts': names,
            'count': count,
        }).encode('utf-8')
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
