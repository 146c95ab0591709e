// RenderHostSvg: one host drawn as lstopo draws it, with the claims on it in colour.
//
// The picture shows the machine's packages; in each, its NUMA nodes with their cores (the SMT
// siblings of a core side by side in one core box, each CPU labelled with its OS index), the
// node's memory pools (base pages and each hugepage size, one bar per pool) and the PCI devices
// local to the node (GPUs, HPUs, NVSwitches, NICs, storage; SR-IOV VFs are counted on their PF
// unless one is claimed). Devices with no known NUMA node are drawn in their own box. Each claim
// gets one colour from a fixed palette (HostPictureColor), used for its CPUs, its share of each
// pool bar and its devices; a legend lists every claim with what it holds. Free CPUs and
// devices are white.
//
// The output is a standalone SVG 1.1 document (no XML declaration, so it can also be pasted into
// HTML as inline <svg>): xmlns, viewBox, width and height are set; colours and fonts are
// presentation attributes, with no <style>, no ids, no scripts, no external fonts or images, so
// several pictures can share one HTML page without clashing. Every element a test or a page may
// look for carries a class starting with "ah-" and data-* attributes:
//   <svg class="ah-host" data-host="NAME">                          the picture
//   <g class="ah-package" data-package="ID">                        a package
//   <g class="ah-node" data-node="ID">                               a NUMA node
//   <g class="ah-core" data-cpus="0,112">                           a core (its SMT siblings)
//   <g class="ah-cpu ah-free" data-cpu="N">                          a CPU nobody holds
//   <g class="ah-cpu ah-claimed ah-claim-ID" data-cpu="N" data-claim="ID" data-use="USE">
//                                                                    a held CPU; USE is vcpu,
//                                                                    emulator or sibling
//   <g class="ah-pool" data-node="ID" data-page-kib="KIB">           one page pool's bar
//   <rect class="ah-pages ah-claim-ID" data-claim="ID" data-pages="N">  a claim's share of it
//   <g class="ah-pci ah-ROLE ah-free|ah-claimed ah-claim-ID" data-pci="ADDR" data-node="ID|-1">
//                                                                    a device; ROLE as
//                                                                    topology::PciRoleName
//   <g class="ah-legend">, <g class="ah-legend-claim" data-claim="ID" data-color="#rrggbb">
// Each of these has a <title> (browsers show it on hover): the CPU's index, core and node, the
// device's address, vendor:device id and name, and the claim id and label holding it.
//
// Deterministic: the same arguments give the same bytes. Pure function; safe from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "placement/placement.h"
#include "topology/host.h"

namespace accel::placement {

/// One claim to colour in the picture. Holds a copy of everything it needs (no pointers).
struct PictureClaim {
  /// The claim's id, e.g. "c-0123456789ab". Shown in the legend and tooltips and as data-claim;
  /// in class names ("ah-claim-ID") every character other than [A-Za-z0-9_-] becomes '_'.
  std::string id;
  /// What it is for, usually the flavor name. Any text: it is escaped, and cut to fit in the
  /// legend (the tooltip has all of it).
  std::string label;
  /// What it holds on the host. CPUs, pages and devices that the host does not have are not
  /// drawn; the legend counts them ("N not on this host").
  Placement placement;
};

/// How to draw.
struct HostPictureOptions {
  /// Cores in one row of a NUMA node box; 0 (or less) = as many as fit in about 480 px (8 cores
  /// of 2 threads), fewer when no node has that many.
  int cores_per_row = 0;
  /// The width and height attributes are the viewBox size times this (the drawing itself is
  /// unchanged), e.g. 0.5 for thumbnails on a fleet page. Values <= 0 mean 1.
  double scale = 1.0;
};

/// The colour ("#rrggbb") of the claim at position `index` in the claims given to
/// RenderHostSvg: a fixed palette of 12 colours, repeated for more claims.
std::string HostPictureColor(size_t index);

/// Returns the SVG document of `host` with `claims` coloured (claims[i] in HostPictureColor(i);
/// the legend lists them in this order). Claims may overlap (a double booking that the claim
/// store should have refused): an overlapping CPU or device takes the first claim's colour, a
/// red outline, class "ah-conflict" and every claim in its classes and tooltip. Never fails for
/// a host that passes topology::CheckInvariants; any other host is drawn as well as it can be.
std::string RenderHostSvg(const topology::HostTopology& host, const std::vector<PictureClaim>& claims,
                          const HostPictureOptions& opts = {});

}  // namespace accel::placement
