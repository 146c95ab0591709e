#!/usr/bin/env python3
"""Writes the fake-NVML example configs next to this script (deterministic; stdlib only).

  h100x8-mig.json      8x H100 80GB (the hgx-h100 host fixture's PCI addresses); GPUs 4-7 in MIG
                       mode with 7 x 1g.10gb each; GPM on every GPU; 18 NVLinks per GPU into the
                       NVSwitch fabric.
  h100x8-all-mig.json  the same board with all 8 GPUs in MIG mode (8 x 7 instances): the exporter
                       benchmark's worst case.

Run `python3 tests/fakes/nvml/examples/gen_examples.py` after changing it; docs/fake-nvml.md
describes the schema.
"""
import json
import os
import re

BUS = ["1B", "43", "52", "61", "9D", "C3", "D1", "DF"]  # fixtures/hosts/hgx-h100.json GPUs


def uuid(prefix, gpu, sub=0):
    return f"{prefix}-{0x5f2e3c10 + gpu:08x}-8b4d-4e6f-{0x9a00 + sub:04x}-{0x1c2d3e4f5000 + gpu * 16 + sub:012x}"


def mig_instances(gpu):
    out = []
    for slot in range(7):
        out.append({
            "gpu_instance_id": 7 + slot,
            "compute_instance_id": 0,
            "profile_id": 19,  # 1g.10gb
            "placement_start": slot,
            "uuid": uuid("MIG", gpu, slot + 1),
            "metrics": {"memory_used_mib": [1200 + 512 * slot, 1300 + 512 * slot], "memory_reserved_mib": 0},
            "gpm": {
                "graphics_util": [40 + 5 * slot, 45 + 5 * slot],
                "sm_util": [35 + 5 * slot, 38 + 5 * slot],
                "any_tensor_util": [20 + 4 * slot, 24 + 4 * slot],
                "dram_bw_util": [15 + 3 * slot, 17 + 3 * slot],
            },
        })
    return out


def device(gpu, mig):
    d = {
        "uuid": uuid("GPU", gpu),
        "name": "NVIDIA H100 80GB HBM3",
        "pci_bus_id": f"00000000:{BUS[gpu]}:00.0",
        "pci_device_id": "0x233010DE",
        "serial": f"16549220{gpu:05d}",
        "minor": gpu,
        "vbios_version": "96.00.99.00.01",
        "metrics": {
            "sm_clock_mhz": [1980, 1965, 1980, 1755],
            "graphics_clock_mhz": [1980, 1965, 1980, 1755],
            "memory_clock_mhz": 2619,
            "video_clock_mhz": 1545,
            "max_sm_clock_mhz": 1980,
            "max_memory_clock_mhz": 2619,
            "temperature_c": [33 + gpu, 35 + gpu, 36 + gpu],
            "memory_temperature_c": [40 + gpu, 41 + gpu],
            "power_mw": [312000 + 1000 * gpu, 318500 + 1000 * gpu, 305250 + 1000 * gpu],
            "power_instant_mw": [330000 + 1000 * gpu, 298000 + 1000 * gpu],
            "power_limit_mw": 700000,
            "enforced_power_limit_mw": 700000,
            "energy_mj": {"start": 1200000000 + 10000000 * gpu, "per_second": 312000},
            "gpu_util_pct": [87, 91, 89],
            "memory_util_pct": [42, 45, 40],
            "encoder_util_pct": 0,
            "decoder_util_pct": 0,
            "memory_total_mib": 81559,
            "memory_used_mib": 9000 if mig else 61234 + 100 * gpu,
            "memory_reserved_mib": 543,
            "pcie_replays": 0,
            "pcie_tx_kbps": 1250000,
            "pcie_rx_kbps": 2500000,
            "ecc_mode": 1,
            "ecc_sbe_volatile": 0,
            "ecc_dbe_volatile": 0,
            "ecc_sbe_aggregate": 3 if gpu == 5 else 0,
            "ecc_dbe_aggregate": 0,
            "remapped_rows_correctable": 1 if gpu == 5 else 0,
            "remapped_rows_uncorrectable": 0,
            "remap_pending": 0,
            "remap_failure": 0,
            "retired_pages_sbe": 0,
            "retired_pages_dbe": 0,
            "retired_pages_pending": 0,
            "nvlink_tx_kib": {"start": 1000000 * gpu, "per_second": 24000000},
            "nvlink_rx_kib": {"start": 1000000 * gpu, "per_second": 23000000},
            "nvlink_links": 18,
            "nvlink_replay_errors": 0,
            "nvlink_recovery_errors": 0,
            "nvlink_crc_flit_errors": 0,
            "nvlink_crc_data_errors": 0,
            "clocks_event_reasons": 0,
            "pstate": 0,
            "persistence_mode": 1,
            "violation_power_ns": 0,
            "violation_thermal_ns": 0,
            "violation_sync_boost_ns": 0,
            "violation_board_limit_ns": 0,
            "violation_low_util_ns": {"start": 5000000000 * gpu, "per_second": 1000000},
            "violation_reliability_ns": 0,
        },
        "gpm": {
            "supported": True,
            "metrics": {
                "graphics_util": [78, 82, 80],
                "sm_util": [70, 74, 72],
                "sm_occupancy": [35, 38],
                "any_tensor_util": [45, 50, 48],
                "dram_bw_util": [38, 41, 40],
                "fp64_util": [12, 14],
                "fp32_util": [20, 22],
                "fp16_util": [30, 33],
                "pcie_tx_per_sec": [1200, 1250],
                "pcie_rx_per_sec": [2400, 2450],
                "nvlink_total_rx_per_sec": 22000,
                "nvlink_total_tx_per_sec": 23000,
            },
        },
    }
    # HGX: all 18 NVLink links of every GPU go to the NVSwitch fabric (one port per link).
    d["nvlink_peers"] = ["switch"] * 18
    if mig:
        d["mig"] = {"mode": 1, "instances": mig_instances(gpu)}
    else:
        d["mig"] = {"mode": 0}
        d["processes"] = [{"pid": 4100 + gpu, "used_memory_mib": 61000, "sm_util_pct": 85, "memory_util_pct": 40}]
    return d


def config(mig_gpus):
    return {
        "driver_version": "580.95.05",
        "nvml_version": "13.580.95.05",
        "cuda_driver_version": 13000,
        "devices": [device(g, g in mig_gpus) for g in range(8)],
    }


def write(name, doc):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    text = json.dumps(doc, indent=2)
    # Lists of numbers and ramps on one line: the files stay readable.
    text = re.sub(r"\[\s*([-\d.,\s]+?)\s*\]",
                  lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)
    text = re.sub(r'\{\s*("start": [-\d.]+),\s*("per_second": [-\d.]+)\s*\}', r"{\1, \2}", text)
    text = re.sub(r'\[\s*((?:"[^"\n]*",\s*)*"[^"\n]*")\s*\]',
                  lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)
    with open(path, "w") as f:
        f.write(text + "\n")


write("h100x8-mig.json", config({4, 5, 6, 7}))
write("h100x8-all-mig.json", config(set(range(8))))
