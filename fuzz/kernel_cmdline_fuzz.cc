// libFuzzer target: arbitrary bytes as /proc/cmdline, then every CPU list in it, and as PCI
// config space for the ACS walk and the PCI Express capability (GDR-07).
//
// The doctor reads these from the host it checks, which may be broken in any way; none of the
// parsers throws, so any exception, crash or sanitizer report is a bug. Invariants checked: a
// parsed CPU list stays inside the machine, isolcpus without flags means domain isolation, and
// the parse is a function of its input (a second parse agrees).
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
//     fuzz/kernel_cmdline_fuzz.cc src/doctor/kernel_cmdline.cc src/doctor/pci_config.cc \
//     src/common/cpuset.cc -o kernel_cmdline_fuzz
//   ./kernel_cmdline_fuzz -max_len=4096
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "doctor/kernel_cmdline.h"
#include "doctor/pci_config.h"

namespace {

using namespace accel::doctor;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckList(std::string_view text, int nr_cpus) {
  accel::CpuSet cpus;
  std::string error;
  if (ParseKernelCpuList(text, nr_cpus, &cpus, &error)) {
    Check(cpus.Count() <= nr_cpus);
    for (int c = cpus.First(); c >= 0; c = cpus.Next(c)) Check(c < nr_cpus);
  } else {
    Check(!error.empty());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // The CPU count comes from the first byte so small and large machines are both tried.
  int nr_cpus = size > 0 ? 1 + data[0] * 2 : 1;
  KernelCmdline cmd = KernelCmdline::Parse(text);
  KernelCmdline again = KernelCmdline::Parse(text);
  Check(cmd.params().size() == again.params().size());
  for (const KernelParam& p : cmd.params()) {
    Check(cmd.Has(p.key));
    Check(cmd.Last(p.key).has_value());
    CheckList(p.value, nr_cpus);
    IsolCpus iso;
    std::string error;
    if (ParseIsolCpus(p.value, nr_cpus, &iso, &error)) {
      Check(iso.flags.empty() ? iso.domain : true);
      for (int c = iso.cpus.First(); c >= 0; c = iso.cpus.Next(c)) Check(c < nr_cpus);
    }
  }
  // The same bytes as config space: the walk must stay inside them.
  if (std::optional<size_t> at = FindExtendedCapability(text, kExtCapAcs)) Check(*at + 4 <= size);
  (void)ReadAcsControl(text);
  // ...and for the PCI Express capability of GDR-07 (standard list from 0x34).
  if (std::optional<size_t> at = FindCapability(text, kCapPciExpress)) Check(*at < size);
  if (std::optional<PcieDeviceRegs> regs = ReadPcieDevice(text)) (void)DevCtlText(*regs);
  return 0;
}
