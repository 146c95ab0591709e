// hwloc's two XML importers, for tests that must mean the same whichever one a machine has.
//
// hwloc 2.x reads XML with libxml2 when its plugin is there (hwloc_xml_libxml.so, Debian package
// libhwloc-plugins, which libhwloc15 only Recommends) and with its own minimal parser otherwise.
// The environment variable HWLOC_LIBXML (0 or 1; it overrides HWLOC_LIBXML_IMPORT) picks one:
// "0" forces the minimal parser, "1" asks for libxml2 and falls back to the minimal parser when
// the plugin is missing (hwloc 2.9, hwloc/topology-xml.c, hwloc_nolibxml_import()). hwloc reads
// the variable once per process, on the first XML import, so set it before the process (or the
// child that accel's isolated importer forks) imports anything. Header only.
#pragma once

#include <ostream>
#include <string>

namespace accel::test_support {

/// One of hwloc's XML importers and the HWLOC_LIBXML value that selects it.
struct HwlocImporter {
  std::string name;          ///< "minimal" or "libxml2", for test names
  std::string hwloc_libxml;  ///< the value of HWLOC_LIBXML that selects it
};

/// Both importers. The libxml2 one is really used only where libhwloc-plugins is installed
/// (scripts/setup.sh installs it); elsewhere hwloc runs the minimal one for it as well.
inline const HwlocImporter kHwlocImporters[] = {{"minimal", "0"}, {"libxml2", "1"}};

/// Prints the importer's name in test output (found by argument-dependent lookup).
inline void PrintTo(const HwlocImporter& importer, std::ostream* os) {
  *os << importer.name << " (HWLOC_LIBXML=" << importer.hwloc_libxml << ")";
}

}  // namespace accel::test_support
