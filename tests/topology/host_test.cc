#include "topology/host.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "topology/sample_host.h"

namespace accel::topology {
namespace host_test {

using ::testing::HasSubstr;

TEST(HostTopology, Lookups) {
  HostTopology h = testing::SampleHost();
  EXPECT_EQ(h.NodeIndex(1), 1);
  EXPECT_EQ(h.NodeIndex(7), -1);
  ASSERT_NE(h.FindPci("0000:18:00.0"), nullptr);
  EXPECT_EQ(h.FindPci("0000:18:00.0")->role, PciRole::kGpu);
  EXPECT_EQ(h.FindPci("0000:18:00.1"), nullptr);
  EXPECT_EQ(h.AllCpus(), (CpuSet{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(HostTopology, AcceleratorVendor) {
  PciDevice d;
  d.role = PciRole::kGpu;
  d.vendor_id = 0x10de;
  EXPECT_EQ(AcceleratorVendor(d), "nvidia");
  d.vendor_id = 0x1002;
  EXPECT_EQ(AcceleratorVendor(d), "amd");
  d.role = PciRole::kHpu;
  d.vendor_id = 0x1da3;
  EXPECT_EQ(AcceleratorVendor(d), "habana");
  d.role = PciRole::kNic;
  d.vendor_id = 0x10de;
  EXPECT_EQ(AcceleratorVendor(d), "");
}

TEST(CheckInvariants, SampleIsValid) { EXPECT_EQ(CheckInvariants(testing::SampleHost()), ""); }

TEST(CheckInvariants, EachViolationIsNamed) {
  struct Case {
    const char* what;
    void (*mutate)(HostTopology&);
    const char* expect;
  };
  const Case cases[] = {
      {"cpu in two nodes", [](HostTopology& h) { h.numa_nodes[1].cpus.Add(0); },
       "CPU 0 is in both numa_nodes[0] (node 0) and numa_nodes[1] (node 1)"},
      {"sibling overlap", [](HostTopology& h) { h.numa_nodes[0].cores[1].Add(0); },
       "cores[1]: CPU 0 is in two sibling sets"},
      {"sibling order",
       [](HostTopology& h) { std::swap(h.numa_nodes[0].cores[0], h.numa_nodes[0].cores[1]); },
       "ordered by their first CPU"},
      {"empty core", [](HostTopology& h) { h.numa_nodes[0].cores.push_back(CpuSet()); },
       "sibling set is empty"},
      {"pools",
       [](HostTopology& h) { std::swap(h.numa_nodes[0].pages[1], h.numa_nodes[0].pages[2]); },
       "ascending by size"},
      {"zero page", [](HostTopology& h) { h.numa_nodes[0].pages[0].size_kib = 0; },
       "page size must be positive"},
      {"distances", [](HostTopology& h) { h.numa_nodes[0].distances.push_back(30); },
       "has 3 entries but the host has 2 nodes"},
      {"node order", [](HostTopology& h) { std::swap(h.numa_nodes[0], h.numa_nodes[1]); },
       "unique and ascending"},
      {"package cpus", [](HostTopology& h) { h.numa_nodes[0].package = 1; },
       "CPUs \"0-3\" are not in package 1"},
      {"package dup cpu", [](HostTopology& h) { h.packages[1].cpus.Add(0); },
       "packages[1].cpus: CPU 0 is already in an earlier package"},
      {"child first", [](HostTopology& h) { std::swap(h.pci[1], h.pci[2]); },
       "is not listed before it"},
      {"vf of vf", [](HostTopology& h) { h.pci[3].physfn = "0000:19:00.1"; },
       "is itself a virtual function"},
      {"hostname", [](HostTopology& h) { h.hostname.clear(); }, "hostname: is empty"},
      {"link", [](HostTopology& h) { h.pci[2].link_gbps = -1; }, "link_gbps"},
      {"host bridge parent", [](HostTopology& h) { h.pci[0].parent = "pci0000:80"; },
       "a host bridge has no parent"},
      {"bad function", [](HostTopology& h) { h.pci[2].address = "0000:18:20.0"; },
       "is not a PCI address"},
  };
  for (const Case& c : cases) {
    HostTopology h = testing::SampleHost();
    c.mutate(h);
    EXPECT_THAT(CheckInvariants(h), HasSubstr(c.expect)) << c.what;
  }
}

TEST(CheckInvariants, AcceptsVmdDomainsAndMemoryOnlyNodes) {
  HostTopology h = testing::SampleHost();
  h.pci.push_back(testing::Pci("pci10000:00", "", PciRole::kHostBridge));
  h.pci.push_back(
      testing::Pci("10000:01:00.0", "pci10000:00", PciRole::kStorage, 0x144d, 1, 0x0108));
  NumaNode cxl;
  cxl.id = 4;
  cxl.memory_kib = 1 << 20;
  cxl.pages = {{4, 1 << 18, 1 << 18}};
  h.numa_nodes.push_back(cxl);
  for (NumaNode& n : h.numa_nodes) n.distances.clear();
  EXPECT_EQ(CheckInvariants(h), "");
}

}  // namespace
}  // namespace accel::topology
