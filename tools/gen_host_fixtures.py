#!/usr/bin/env python3
"""Writes accel's host topology fixtures: fixtures/hosts/*.json (schema "accel.host/v1").

Each fixture is a realistic machine described by hand (see docs/fixtures.md): packages, NUMA
nodes with SMT sibling sets, memory and hugepage pools, and the PCI tree with accelerators, NICs,
switches and root ports. The output is deterministic and laid out exactly as docs/schemas.md
shows it, so the C++ loader's ToJson(HostFromJson(file)) gives the file back byte for byte.
Before writing, every document is checked against the invariants of src/topology/host.h
(CheckInvariants) plus the schema's own rules; a violation stops the script with a message.

Usage: python3 tools/gen_host_fixtures.py [--check]
  --check  write nothing; exit 1 when a committed fixture differs from what would be generated.
Standard library only.
"""

import argparse
import json
import os
import re
import sys

SCHEMA = "accel.host/v1"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "fixtures", "hosts")

KIB_PER_GIB = 1024 * 1024
PAGE_4K, PAGE_2M, PAGE_1G = 4, 2048, 1048576

# PCIe link bandwidth in GB/s as hwloc reports it (lanes * GT/s * encoding / 8), to 3 decimals.
GEN5_X16 = 63.015
GEN4_X16 = 31.508
GEN4_X4 = 7.877
GEN4_X2 = 3.938
GEN2_X1 = 0.5

# PCI key order of docs/schemas.md, split into the lines topology/host_json.cc writes:
# identity; ids and locality; name and OS devices; SR-IOV.
PCI_LINE_KEYS = (
    ("address", "parent", "role"),
    ("vendor_id", "device_id", "class", "numa_node", "link_gbps"),
    ("name", "rdma_devices", "netdevs", "os_devices"),
    ("sriov_total_vfs", "sriov_num_vfs", "physfn"),
)


# ---------------------------------------------------------------------------------------------
# Small helpers


def cpu_list(cpus):
    """Compact CPU list ("0-3,8") of an iterable of ints, as CpuSet::ToString writes it."""
    out, run = [], []
    for cpu in sorted(set(cpus)):
        if run and cpu == run[-1] + 1:
            run.append(cpu)
            continue
        if run:
            out.append(_run_text(run))
        run = [cpu]
    if run:
        out.append(_run_text(run))
    return ",".join(out)


def _run_text(run):
    return str(run[0]) if len(run) == 1 else "%d-%d" % (run[0], run[-1])


def parse_cpu_list(text):
    """Set of ints of a compact CPU list; raises ValueError on a malformed list."""
    cpus = set()
    if text == "":
        return cpus
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise ValueError("bad CPU list token %r" % part)
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if hi < lo:
            raise ValueError("descending range %r" % part)
        cpus.update(range(lo, hi + 1))
    return cpus


def hex4(value):
    return "%04x" % value


def classify(vendor, cls):
    """The role of a PCI function by the classification rules at the end of docs/schemas.md."""
    base = cls >> 8
    if vendor == 0x10DE and base == 0x03:
        return "gpu"
    if vendor == 0x10DE and cls == 0x0680:
        return "nvswitch"
    if vendor == 0x1002 and base in (0x03, 0x12):
        return "gpu"
    if vendor == 0x1DA3 and base == 0x12:
        return "hpu"
    if base == 0x02:
        return "nic"
    if base == 0x01:
        return "storage"
    if cls == 0x0604:
        return "bridge"
    return "other"


# ---------------------------------------------------------------------------------------------
# Document builders


def package(pkg_id, cpus, model):
    return {"id": pkg_id, "cpus": cpu_list(cpus), "model": model}


def numa_node(node_id, pkg_id, cores, memory_kib, hugepages, distances, base_free_pct):
    """A NUMA node. cores: list of sibling tuples; hugepages: [(size_kib, total, free)] above
    the base page. The base pool holds the memory not in hugepages; base_free_pct of it is free
    (a live-looking reading)."""
    cpus = [cpu for core in cores for cpu in core]
    huge_kib = sum(size * total for size, total, _ in hugepages)
    assert (memory_kib - huge_kib) % PAGE_4K == 0
    base_total = (memory_kib - huge_kib) // PAGE_4K
    pools = [{"size_kib": PAGE_4K, "total": base_total,
              "free": base_total * base_free_pct // 100}]
    pools += [{"size_kib": s, "total": t, "free": f} for s, t, f in hugepages]
    return {
        "id": node_id,
        "package": pkg_id,
        "cpus": cpu_list(cpus),
        "cores": [cpu_list(core) for core in sorted(cores, key=min)],
        "memory_kib": memory_kib,
        "hugepages": pools,
        "distances": list(distances),
    }


class PciTree:
    """Collects PCI objects in any order; `ordered()` returns them in tree order (host bridges
    ascending, then depth first with siblings ascending by address)."""

    def __init__(self):
        self._devices = {}

    def host_bridge(self, bus, domain=0):
        address = "pci%04x:%02x" % (domain, bus)
        self._put({"address": address, "parent": "", "role": "host_bridge"})
        return address

    def add(self, address, parent, vendor, device, cls, node, link_gbps, name="",
            rdma_devices=(), netdevs=(), os_devices=(), sriov_total_vfs=0, sriov_num_vfs=0,
            physfn=""):
        """Adds a PCI function; optional fields equal to their default are left out, except that
        the two SR-IOV counts are written together (as the schema example and ToJson do)."""
        dev = {
            "address": address, "parent": parent, "role": classify(vendor, cls),
            "vendor_id": hex4(vendor), "device_id": hex4(device), "class": hex4(cls),
            "numa_node": node, "link_gbps": float(link_gbps),
        }
        optional = (("name", name), ("rdma_devices", list(rdma_devices)),
                    ("netdevs", list(netdevs)), ("os_devices", list(os_devices)))
        for key, value in optional:
            if value:
                dev[key] = value
        if sriov_total_vfs or sriov_num_vfs:
            dev["sriov_total_vfs"] = sriov_total_vfs
            dev["sriov_num_vfs"] = sriov_num_vfs
        if physfn:
            dev["physfn"] = physfn
        self._put(dev)
        return address

    def _put(self, dev):
        if dev["address"] in self._devices:
            raise ValueError("PCI address %s added twice" % dev["address"])
        self._devices[dev["address"]] = dev

    def ordered(self):
        children = {}
        for dev in self._devices.values():
            children.setdefault(dev["parent"], []).append(dev)
        out = []

        def walk(parent):
            for dev in sorted(children.get(parent, []), key=lambda d: d["address"]):
                out.append(dev)
                walk(dev["address"])

        walk("")
        return out


def host(hostname, source, packages, nodes, pci):
    return {"schema": SCHEMA, "hostname": hostname, "source": source, "packages": packages,
            "numa_nodes": nodes, "pci": pci.ordered()}


def smt_cores(first_cpus, sibling_offset):
    """Two-thread cores: (cpu, cpu + sibling_offset) for each cpu in first_cpus."""
    return [(cpu, cpu + sibling_offset) for cpu in first_cpus]


# PCI ids used below.
BROADCOM_PEX_GEN5 = (0x1000, 0xC030, "PEX890xx PCIe Gen 5 Switch")
BROADCOM_PEX_GEN4 = (0x1000, 0xC010, "PEX880xx PCIe Gen 4 Switch")
NVME_PM9A3 = (0x144D, 0xA80A, "NVMe SSD Controller PM9A1/PM9A3/980PRO")
CLASS_BRIDGE, CLASS_NVME, CLASS_ETHERNET, CLASS_INFINIBAND_NET = 0x0604, 0x0108, 0x0200, 0x0207
CLASS_3D, CLASS_VGA, CLASS_ACCEL, CLASS_OTHER_BRIDGE, CLASS_AUDIO = 0x0302, 0x0300, 0x1200, 0x0680, 0x0403


def switch(pci, upstream_bus, switch_ids, node, uplink_gbps, root_port, ports):
    """A PCIe switch under `root_port`: upstream port at upstream_bus:00.0 and one downstream
    port per entry of `ports` at (upstream_bus+1):dev.0. ports: [(dev, secondary_bus)].
    Returns {secondary_bus: downstream port address}."""
    vendor, device, name = switch_ids
    upstream = pci.add("0000:%02x:00.0" % upstream_bus, root_port, vendor, device, CLASS_BRIDGE,
                       node, uplink_gbps, name)
    downstream = {}
    for dev, bus in ports:
        downstream[bus] = pci.add("0000:%02x:%02x.0" % (upstream_bus + 1, dev), upstream, vendor,
                                  device, CLASS_BRIDGE, node, uplink_gbps, name)
    return downstream


def aspeed_vga(pci, root_port, bridge_bus, node, os_devices=()):
    """The BMC's ASPEED AST2600 VGA behind its PCIe-to-PCI bridge: class 0300 but not a GPU."""
    bridge = pci.add("0000:%02x:00.0" % bridge_bus, root_port, 0x1A03, 0x1150, CLASS_BRIDGE, node,
                     GEN2_X1, "AST1150 PCI-to-PCI Bridge")
    pci.add("0000:%02x:00.0" % (bridge_bus + 1), bridge, 0x1A03, 0x2000, CLASS_VGA, node, GEN2_X1,
            "ASPEED Graphics Family", os_devices=os_devices)


# ---------------------------------------------------------------------------------------------
# HGX H100 / H200


# (node, NIC bus, rdma device, netdev, NVMe on this switch) per GPU-NIC switch; GPU bus = NIC bus + 3.
HGX_SWITCHES = (
    (0, 0x18, "mlx5_0", "ibp24s0", True),
    (0, 0x40, "mlx5_3", "ibp64s0", False),
    (0, 0x4F, "mlx5_4", "ibp79s0", True),
    (0, 0x5E, "mlx5_5", "ibp94s0", False),
    (1, 0x9A, "mlx5_6", "ibp154s0", True),
    (1, 0xC0, "mlx5_9", "ibp192s0", False),
    (1, 0xCE, "mlx5_10", "ibp206s0", True),
    (1, 0xDC, "mlx5_11", "ibp220s0", False),
)
SPR_ROOT_PORT = (0x8086, 0x352A)
SPR_PCH_ROOT_PORT = (0x8086, 0x1BB8)
CX7 = (0x15B3, 0x1021, "MT2910 Family [ConnectX-7]")


def hgx(hostname, gpu_device_id, gpu_name, source):
    pci = PciTree()
    add_hgx_node0_platform(pci)
    nvme_index = 0
    for index, (node, nic_bus, rdma, netdev, has_nvme) in enumerate(HGX_SWITCHES):
        root_bus = nic_bus - 3
        hb = pci.host_bridge(root_bus)
        root = pci.add("0000:%02x:01.0" % root_bus, hb, *SPR_ROOT_PORT, CLASS_BRIDGE, node,
                       GEN5_X16)
        ports = [(0, nic_bus), (3, nic_bus + 3)] + ([(1, nic_bus + 1)] if has_nvme else [])
        down = switch(pci, root_bus + 1, BROADCOM_PEX_GEN5, node, GEN5_X16, root, ports)
        pci.add("0000:%02x:00.0" % nic_bus, down[nic_bus], CX7[0], CX7[1], CLASS_INFINIBAND_NET,
                node, GEN5_X16, CX7[2], rdma_devices=[rdma], netdevs=[netdev], sriov_total_vfs=16)
        pci.add("0000:%02x:00.0" % (nic_bus + 3), down[nic_bus + 3], 0x10DE, gpu_device_id,
                CLASS_3D, node, GEN5_X16, gpu_name, os_devices=["nvml%d" % index])
        if has_nvme:
            pci.add("0000:%02x:00.0" % (nic_bus + 1), down[nic_bus + 1], *NVME_PM9A3[:2],
                    CLASS_NVME, node, GEN4_X4, NVME_PM9A3[2],
                    os_devices=["nvme%dn1" % nvme_index])
            nvme_index += 1
    # Dual-port ConnectX-7 Ethernet for storage / in-band traffic, one per socket.
    for node, root_bus, rdmas, slot in ((0, 0x26, ("mlx5_1", "mlx5_2"), 6),
                                        (1, 0xA7, ("mlx5_7", "mlx5_8"), 7)):
        hb = pci.host_bridge(root_bus)
        root = pci.add("0000:%02x:01.0" % root_bus, hb, *SPR_ROOT_PORT, CLASS_BRIDGE, node,
                       GEN5_X16)
        for fn, rdma in enumerate(rdmas):
            pci.add("0000:%02x:00.%d" % (root_bus + 1, fn), root, CX7[0], CX7[1], CLASS_ETHERNET,
                    node, GEN5_X16, CX7[2], rdma_devices=[rdma],
                    netdevs=["ens%df%dnp%d" % (slot, fn, fn)])

    packages = [
        package(0, list(range(0, 56)) + list(range(112, 168)), "Intel(R) Xeon(R) Platinum 8480+"),
        package(1, list(range(56, 112)) + list(range(168, 224)), "Intel(R) Xeon(R) Platinum 8480+"),
    ]
    hugepages = [(PAGE_2M, 16384, 16384), (PAGE_1G, 768, 768)]
    nodes = [
        numa_node(0, 0, smt_cores(range(0, 56), 112), 1024 * KIB_PER_GIB, hugepages, [10, 21], 91),
        numa_node(1, 1, smt_cores(range(56, 112), 112), 1024 * KIB_PER_GIB, hugepages, [21, 10],
                  88),
    ]
    return host(hostname, source, packages, nodes, pci)


def add_hgx_node0_platform(pci):
    """Root bus 00 of socket 0: the 4 NVSwitches behind one PCIe switch, the BMC's VGA and the
    1 GbE management NIC."""
    hb = pci.host_bridge(0x00)
    root = pci.add("0000:00:01.0", hb, *SPR_ROOT_PORT, CLASS_BRIDGE, 0, GEN5_X16)
    nvswitch_buses = (0x03, 0x04, 0x05, 0x06)
    down = switch(pci, 0x01, BROADCOM_PEX_GEN5, 0, GEN5_X16, root,
                  [(dev, bus) for dev, bus in enumerate(nvswitch_buses)])
    for bus in nvswitch_buses:
        pci.add("0000:%02x:00.0" % bus, down[bus], 0x10DE, 0x22A3, CLASS_OTHER_BRIDGE, 0, GEN4_X2,
                "GH100 [H100 NVSwitch]")
    bmc_port = pci.add("0000:00:1c.0", hb, *SPR_PCH_ROOT_PORT, CLASS_BRIDGE, 0, GEN2_X1)
    aspeed_vga(pci, bmc_port, 0x07, 0)
    mgmt_port = pci.add("0000:00:1c.4", hb, *SPR_PCH_ROOT_PORT, CLASS_BRIDGE, 0, GEN2_X1)
    pci.add("0000:09:00.0", mgmt_port, 0x8086, 0x1533, CLASS_ETHERNET, 0, GEN2_X1,
            "I210 Gigabit Network Connection", netdevs=["eno1"])


# ---------------------------------------------------------------------------------------------
# 2x EPYC 9654 in NPS4 with 8 MI300X


EPYC_ROOT_PORT = (0x1022, 0x14AB)
NPS4_ROOT_BUSES = (0x00, 0x20, 0x40, 0x60, 0x80, 0xA0, 0xC0, 0xE0)
THOR2 = (0x14E4, 0x1760, "BCM57608 10Gb/25Gb/50Gb/100Gb/200Gb/400Gb Ethernet")


def epyc_nps4_mi300x():
    pci = PciTree()
    for node, root_bus in enumerate(NPS4_ROOT_BUSES):
        hb = pci.host_bridge(root_bus)
        root = pci.add("0000:%02x:01.1" % root_bus, hb, *EPYC_ROOT_PORT, CLASS_BRIDGE, node,
                       GEN5_X16)
        nic_bus, gpu_bus = root_bus + 3, root_bus + 4
        down = switch(pci, root_bus + 1, BROADCOM_PEX_GEN5, node, GEN5_X16, root,
                      [(0, nic_bus), (1, gpu_bus)])
        pci.add("0000:%02x:00.0" % nic_bus, down[nic_bus], *THOR2[:2], CLASS_ETHERNET, node,
                GEN5_X16, THOR2[2], rdma_devices=["bnxt_re%d" % node],
                netdevs=["enp%ds0np0" % nic_bus])
        pci.add("0000:%02x:00.0" % gpu_bus, down[gpu_bus], 0x1002, 0x74A1, CLASS_ACCEL, node,
                GEN5_X16, "AMD Instinct MI300X",
                os_devices=["card%d" % (node + 1), "renderD%d" % (128 + node)])
    # Node 0 also has the boot NVMe, the BMC's VGA (DRM card0) and a 1 GbE management NIC.
    hb = "pci0000:00"
    nvme_port = pci.add("0000:00:03.1", hb, *EPYC_ROOT_PORT, CLASS_BRIDGE, 0, GEN4_X4)
    pci.add("0000:05:00.0", nvme_port, *NVME_PM9A3[:2], CLASS_NVME, 0, GEN4_X4, NVME_PM9A3[2],
            os_devices=["nvme0n1"])
    mgmt_port = pci.add("0000:00:05.2", hb, *EPYC_ROOT_PORT, CLASS_BRIDGE, 0, GEN2_X1)
    for fn in (0, 1):
        pci.add("0000:06:00.%d" % fn, mgmt_port, 0x14E4, 0x165F, CLASS_ETHERNET, 0, GEN2_X1,
                "NetXtreme BCM5720 Gigabit Ethernet PCIe", netdevs=["eno%d" % (fn + 1)])
    bmc_port = pci.add("0000:00:07.1", hb, *EPYC_ROOT_PORT, CLASS_BRIDGE, 0, GEN2_X1)
    aspeed_vga(pci, bmc_port, 0x07, 0, os_devices=["card0"])

    model = "AMD EPYC 9654 96-Core Processor"
    packages = [package(p, list(range(96 * p, 96 * p + 96)) +
                        list(range(192 + 96 * p, 192 + 96 * p + 96)), model) for p in (0, 1)]
    nodes = []
    for node in range(8):
        distances = [10 if other == node else 12 if other // 4 == node // 4 else 32
                     for other in range(8)]
        nodes.append(numa_node(node, node // 4, smt_cores(range(24 * node, 24 * node + 24), 192),
                               192 * KIB_PER_GIB, [(PAGE_2M, 0, 0), (PAGE_1G, 160, 160)],
                               distances, 80 + node))
    return host("epyc-nps4-mi300x",
                "fixture: 2-socket EPYC 9654 NPS4 (8 NUMA nodes) with 8 MI300X, each sharing a "
                "PCIe Gen5 switch with a 400G Thor2 RoCE NIC", packages, nodes, pci)


# ---------------------------------------------------------------------------------------------
# 2x Xeon 8380 with 8 Gaudi2


ICX_ROOT_PORT = (0x8086, 0x347A)
CX6DX = (0x15B3, 0x101D, "MT2892 Family [ConnectX-6 Dx]")
# (node, root bus, first accel index) per PCIe switch holding two Gaudi2.
GAUDI_SWITCHES = ((0, 0x16, 0), (0, 0x30, 2), (1, 0x97, 4), (1, 0xB0, 6))


def gaudi2_8hpu():
    pci = PciTree()
    for node, root_bus, first in GAUDI_SWITCHES:
        hb = pci.host_bridge(root_bus)
        root = pci.add("0000:%02x:02.0" % root_bus, hb, *ICX_ROOT_PORT, CLASS_BRIDGE, node,
                       GEN4_X16)
        buses = (root_bus + 3, root_bus + 4)
        down = switch(pci, root_bus + 1, BROADCOM_PEX_GEN4, node, GEN4_X16, root,
                      [(0, buses[0]), (1, buses[1])])
        for i, bus in enumerate(buses):
            pci.add("0000:%02x:00.0" % bus, down[bus], 0x1DA3, 0x1020, CLASS_ACCEL, node,
                    GEN4_X16, "Habana Labs Gaudi2 HL-225", os_devices=["accel%d" % (first + i)])
    for node, root_bus in ((0, 0x4A), (1, 0xCA)):
        hb = pci.host_bridge(root_bus)
        root = pci.add("0000:%02x:02.0" % root_bus, hb, *ICX_ROOT_PORT, CLASS_BRIDGE, node,
                       GEN4_X16)
        pci.add("0000:%02x:00.0" % (root_bus + 1), root, *CX6DX[:2], CLASS_ETHERNET, node,
                GEN4_X16, CX6DX[2], rdma_devices=["mlx5_%d" % node],
                netdevs=["ens%dnp0" % (node + 1)], sriov_total_vfs=8)
    hb = pci.host_bridge(0x64)
    root = pci.add("0000:64:02.0", hb, *ICX_ROOT_PORT, CLASS_BRIDGE, 0, GEN4_X4)
    pci.add("0000:65:00.0", root, *NVME_PM9A3[:2], CLASS_NVME, 0, GEN4_X4, NVME_PM9A3[2],
            os_devices=["nvme0n1"])

    model = "Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz"
    packages = [package(p, list(range(40 * p, 40 * p + 40)) +
                        list(range(80 + 40 * p, 120 + 40 * p)), model) for p in (0, 1)]
    hugepages = [(PAGE_2M, 0, 0), (PAGE_1G, 256, 256)]
    nodes = [numa_node(n, n, smt_cores(range(40 * n, 40 * n + 40), 80), 512 * KIB_PER_GIB,
                       hugepages, [10, 20] if n == 0 else [20, 10], 93 - 4 * n)
             for n in (0, 1)]
    return host("gaudi2-8hpu",
                "fixture: 2-socket Xeon 8380 with 8 Gaudi2 HL-225 in pairs behind PCIe Gen4 "
                "switches and one ConnectX-6 Dx per socket", packages, nodes, pci)


# ---------------------------------------------------------------------------------------------
# Ryzen 9 7950X desktop with an RTX 4090


RAPHAEL_ROOT_PORT = (0x1022, 0x14DB)


def devbox():
    pci = PciTree()
    hb = pci.host_bridge(0x00)
    gpu_port = pci.add("0000:00:01.1", hb, *RAPHAEL_ROOT_PORT, CLASS_BRIDGE, 0, GEN4_X16)
    pci.add("0000:01:00.0", gpu_port, 0x10DE, 0x2684, CLASS_VGA, 0, GEN4_X16,
            "NVIDIA GeForce RTX 4090", os_devices=["nvml0"])
    pci.add("0000:01:00.1", gpu_port, 0x10DE, 0x22BA, CLASS_AUDIO, 0, GEN4_X16,
            "AD102 High Definition Audio Controller")
    nvme_port = pci.add("0000:00:01.2", hb, *RAPHAEL_ROOT_PORT, CLASS_BRIDGE, 0, GEN4_X4)
    pci.add("0000:02:00.0", nvme_port, 0x144D, 0xA80C, CLASS_NVME, 0, GEN4_X4,
            "NVMe SSD Controller S4LV008[Pascal]", os_devices=["nvme0n1"])
    chipset_port = pci.add("0000:00:02.1", hb, *RAPHAEL_ROOT_PORT, CLASS_BRIDGE, 0, GEN4_X4)
    upstream = pci.add("0000:03:00.0", chipset_port, 0x1022, 0x43F4, CLASS_BRIDGE, 0, GEN4_X4,
                       "600 Series Chipset PCIe Switch Upstream Port")
    downstream = pci.add("0000:04:0c.0", upstream, 0x1022, 0x43F5, CLASS_BRIDGE, 0, GEN2_X1,
                         "600 Series Chipset PCIe Switch Downstream Port")
    pci.add("0000:05:00.0", downstream, 0x8086, 0x15F3, CLASS_ETHERNET, 0, GEN2_X1,
            "Ethernet Controller I225-V", netdevs=["enp5s0"])

    packages = [package(0, range(0, 32), "AMD Ryzen 9 7950X 16-Core Processor")]
    nodes = [numa_node(0, 0, smt_cores(range(0, 16), 16), 64 * KIB_PER_GIB,
                       [(PAGE_2M, 4096, 3000)], [10], 72)]
    return host("devbox", "fixture: desktop Ryzen 9 7950X (1 NUMA node) with one GeForce RTX 4090",
                packages, nodes, pci)


def all_hosts():
    return [
        hgx("hgx-h100", 0x2330, "NVIDIA H100 80GB HBM3",
            "fixture: 2-socket HGX H100 8-GPU with 8 ConnectX-7 behind PCIe Gen5 switches"),
        hgx("hgx-h200", 0x2335, "NVIDIA H200",
            "fixture: 2-socket HGX H200 (141 GB) 8-GPU with 8 ConnectX-7 behind PCIe Gen5 "
            "switches"),
        epyc_nps4_mi300x(),
        gaudi2_8hpu(),
        devbox(),
    ]


# ---------------------------------------------------------------------------------------------
# Layout: exactly what topology/host_json.cc's ToJson writes, after the schema example (keys in
# documented order, 2-space indentation, one line per package and hugepage pool, cores and
# distances inline, a PCI object on up to four lines, a trailing newline).


def compact(value):
    return json.dumps(value, separators=(", ", ": "))


def render(doc):
    lines = ["{"]
    for key in ("schema", "hostname", "source"):
        lines.append("  %s: %s," % (compact(key), compact(doc[key])))
    lines.append('  "packages": ' + _render_list([compact(p) for p in doc["packages"]], 4) + ",")
    lines.append('  "numa_nodes": ' + _render_list([_render_node(n) for n in doc["numa_nodes"]],
                                                   4) + ",")
    lines.append('  "pci": ' + _render_list([_render_pci(d) for d in doc["pci"]], 4))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _render_list(items, indent):
    if not items:
        return "[]"
    pad = " " * indent
    return "[\n" + ",\n".join(pad + item for item in items) + "\n" + " " * (indent - 2) + "]"


def _render_node(node):
    pad = " " * 6
    fields = [pad + "%s: %s" % (compact(k), compact(node[k]))
              for k in ("id", "package", "cpus", "cores", "memory_kib")]
    fields.append(pad + '"hugepages": ' +
                  _render_list([compact(p) for p in node["hugepages"]], 8))
    fields.append(pad + '"distances": ' + compact(node["distances"]))
    return "{\n" + ",\n".join(fields) + "\n    }"


def _render_pci(dev):
    groups = []
    for keys in PCI_LINE_KEYS:
        parts = ["%s: %s" % (compact(k), compact(dev[k])) for k in keys if k in dev]
        if parts:
            groups.append(", ".join(parts))
    return "{" + ",\n     ".join(groups) + "}"


# ---------------------------------------------------------------------------------------------
# Validation: the invariants of host.h's CheckInvariants plus the schema's own rules.

NODE_KEYS = ["id", "package", "cpus", "cores", "memory_kib", "hugepages", "distances"]
POOL_KEYS = ["size_kib", "total", "free"]
PCI_KEYS = [k for keys in PCI_LINE_KEYS for k in keys]
HEX4 = re.compile(r"[0-9a-f]{4}")
HOST_BRIDGE_ADDRESS = re.compile(r"pci[0-9a-f]{4}:[0-9a-f]{2}")
FUNCTION_ADDRESS = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[01][0-9a-f]\.[0-7]")


class Invalid(Exception):
    pass


def require(condition, message):
    if not condition:
        raise Invalid(message)


def validate(doc):
    """Raises Invalid naming the first violated rule."""
    require(list(doc) == ["schema", "hostname", "source", "packages", "numa_nodes", "pci"],
            "top-level keys out of order: %s" % list(doc))
    require(doc["schema"] == SCHEMA and doc["hostname"], "schema/hostname")
    package_cpus = validate_packages(doc["packages"])
    validate_nodes(doc["numa_nodes"], package_cpus)
    validate_pci(doc["pci"], {n["id"] for n in doc["numa_nodes"]})


def validate_packages(packages):
    seen, cpus_by_id = set(), {}
    for i, pkg in enumerate(packages):
        require(list(pkg) in (["id", "cpus", "model"], ["id", "cpus"]), "packages[%d] keys" % i)
        require(i == 0 or pkg["id"] > packages[i - 1]["id"], "packages[%d].id not ascending" % i)
        cpus = parse_cpu_list(pkg["cpus"])
        require(cpu_list(cpus) == pkg["cpus"], "packages[%d].cpus not compact" % i)
        require(not cpus & seen, "packages[%d].cpus overlap another package" % i)
        require(pkg.get("model", "x") != "", "packages[%d].model empty but written" % i)
        seen |= cpus
        cpus_by_id[pkg["id"]] = cpus
    return cpus_by_id


def validate_nodes(nodes, package_cpus):
    owned = set()
    for i, node in enumerate(nodes):
        where = "numa_nodes[%d]" % i
        require(list(node) == NODE_KEYS, where + " keys out of order")
        require(i == 0 or node["id"] > nodes[i - 1]["id"], where + ".id not ascending")
        cpus = parse_cpu_list(node["cpus"])
        require(cpu_list(cpus) == node["cpus"], where + ".cpus not compact")
        require(not cpus & owned, where + ".cpus: a CPU is in two nodes")
        owned |= cpus
        if node["package"] != -1:
            require(node["package"] in package_cpus, where + ".package unknown")
            require(cpus <= package_cpus[node["package"]], where + ".cpus not in its package")
        validate_cores(node, cpus, where)
        validate_pools(node, where)
        row = node["distances"]
        require(len(row) == len(nodes), where + ".distances: not square")
        require(row[i] == 10, where + ".distances: local distance is not 10")
        require(all(row[j] == nodes[j]["distances"][i] for j in range(len(nodes))),
                where + ".distances: not symmetric")
    require(owned == set().union(*package_cpus.values()), "node CPUs differ from package CPUs")


def validate_cores(node, cpus, where):
    covered, last_first = set(), -1
    for c, text in enumerate(node["cores"]):
        core = parse_cpu_list(text)
        require(core and cpu_list(core) == text, "%s.cores[%d] empty or not compact" % (where, c))
        require(not core & covered, "%s.cores[%d]: CPU in two sibling sets" % (where, c))
        require(min(core) > last_first, "%s.cores[%d] not ordered by first CPU" % (where, c))
        last_first = min(core)
        covered |= core
    require(covered == cpus, where + ".cores do not partition cpus")


def validate_pools(node, where):
    pools = node["hugepages"]
    require(pools and pools[0]["size_kib"] == PAGE_4K, where + ".hugepages: no 4 KiB base pool")
    for p, pool in enumerate(pools):
        require(list(pool) == POOL_KEYS, "%s.hugepages[%d] keys" % (where, p))
        require(p == 0 or pool["size_kib"] > pools[p - 1]["size_kib"],
                "%s.hugepages[%d] not ascending" % (where, p))
        require(0 <= pool["free"] <= pool["total"], "%s.hugepages[%d].free" % (where, p))
    huge_kib = sum(p["size_kib"] * p["total"] for p in pools[1:])
    require(pools[0]["total"] * PAGE_4K + huge_kib == node["memory_kib"],
            where + ".hugepages: base pool + hugepages != memory_kib")


def validate_pci(devices, node_ids):
    position, names = {}, set()
    for i, dev in enumerate(devices):
        where = "pci[%d] (%s)" % (i, dev.get("address"))
        require([k for k in PCI_KEYS if k in dev] == list(dev), where + " keys out of order")
        require(dev["address"] not in position, where + " address appears twice")
        if dev["role"] == "host_bridge":
            require(list(dev) == ["address", "parent", "role"], where + " host bridge fields")
            require(HOST_BRIDGE_ADDRESS.fullmatch(dev["address"]) and dev["parent"] == "",
                    where + " host bridge address/parent")
        else:
            validate_function(dev, where, node_ids)
            parent = position.get(dev["parent"])
            require(parent is not None, where + " parent not listed before it")
            require(devices[parent]["role"] in ("bridge", "host_bridge"),
                    where + " parent is not a bridge")
            for name in dev.get("rdma_devices", []) + dev.get("netdevs", []) + \
                    dev.get("os_devices", []):
                require(name not in names, where + " OS device name %s used twice" % name)
                names.add(name)
        position[dev["address"]] = i


def validate_function(dev, where, node_ids):
    require(FUNCTION_ADDRESS.fullmatch(dev["address"]), where + " malformed address")
    for key in ("vendor_id", "device_id", "class"):
        require(HEX4.fullmatch(dev[key]), where + " %s is not 4 lower-case hex digits" % key)
    require(dev["role"] == classify(int(dev["vendor_id"], 16), int(dev["class"], 16)),
            where + " role does not follow the classification rules")
    require(dev["numa_node"] in node_ids, where + " numa_node unknown")
    # Never 0 or a whole number: readers may print 0 / 1.0 differently; keep round trips exact.
    require(isinstance(dev["link_gbps"], float) and dev["link_gbps"] != int(dev["link_gbps"]),
            where + " link_gbps must be a fractional number")
    for key in ("name", "rdma_devices", "netdevs", "os_devices", "physfn"):
        require(key not in dev or dev[key], where + " %s written with its default" % key)
    require(("sriov_total_vfs" in dev) == ("sriov_num_vfs" in dev), where + " SR-IOV pair")
    require(0 <= dev.get("sriov_num_vfs", 0) <= dev.get("sriov_total_vfs", 0), where + " sriov")
    if "sriov_total_vfs" in dev:
        require(dev["sriov_total_vfs"] or dev["sriov_num_vfs"], where + " SR-IOV counts are 0")


# ---------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed files instead of writing them")
    args = parser.parse_args()
    stale = []
    for doc in all_hosts():
        text = render(doc)
        try:
            validate(json.loads(text))
        except Invalid as e:
            sys.exit("%s: invalid fixture: %s" % (doc["hostname"], e))
        require(json.loads(text) == doc, "%s: layout changed the data" % doc["hostname"])
        path = os.path.join(OUT_DIR, doc["hostname"] + ".json")
        if args.check:
            if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
                stale.append(path)
            continue
        os.makedirs(OUT_DIR, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        print("wrote %s (%d PCI objects)" % (os.path.relpath(path, ROOT), len(doc["pci"])))
    if stale:
        sys.exit("stale fixtures (run python3 tools/gen_host_fixtures.py): " + ", ".join(stale))


if __name__ == "__main__":
    main()
