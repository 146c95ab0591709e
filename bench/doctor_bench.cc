// doctor_bench: the cost of a whole `accel doctor` run (the target: under 1 s).
//
//   BM_DoctorInProcess/<host>   LoadSysfsHost + RunDoctor + RenderDoctorText on a fake sysfs tree
//                               of the fixture host (tests/support/fake_sysfs.h), bare-metal role
//   BM_DoctorProcess/<host>     the same as a user runs it: `accel doctor --root TREE`, a fresh
//                               process each time (start-up, tree walk, checks, output)
// Trees are written once to /dev/shm (or the temp directory) and removed at exit.
#include <benchmark/benchmark.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "doctor/doctor.h"
#include "support/fake_sysfs.h"
#include "topology/sources.h"
#include "topology/sysfs_source.h"

namespace accel::bench {
namespace {

namespace fs = std::filesystem;

std::string SourceDir() {
  std::string file = __FILE__;
  return file.substr(0, file.rfind("/bench/"));
}

const char* kHosts[] = {"hgx-h100", "epyc-nps4-mi300x", "vm-guest-h100x8"};

// One tree per fixture host, written on first use.
const std::string& Tree(int host) {
  static std::string roots[3];
  if (roots[host].empty()) {
    fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    fs::path root = base / ("accel-doctor-bench-" + std::to_string(::getpid()) + "-" + kHosts[host]);
    fs::remove_all(root);
    topology::HostTopology h =
        topology::LoadTopology(SourceDir() + "/fixtures/hosts/" + kHosts[host] + ".json");
    testing::WriteFakeSysfs(h, root.string());
    roots[host] = root.string();
    std::atexit([] {
      for (const std::string& r : roots) {
        std::error_code ec;
        if (!r.empty()) fs::remove_all(r, ec);
      }
    });
  }
  return roots[host];
}

void BM_DoctorInProcess(benchmark::State& state) {
  const std::string& root = Tree(static_cast<int>(state.range(0)));
  doctor::DoctorOptions options;
  options.root = root;
  size_t findings = 0;
  for (auto _ : state) {
    topology::HostTopology host = topology::LoadSysfsHost(root);
    doctor::DoctorReport report = doctor::RunDoctor(host, options);
    std::string text = doctor::RenderDoctorText(report, true);
    findings = report.findings.size();
    benchmark::DoNotOptimize(text);
  }
  state.SetLabel(std::string(kHosts[state.range(0)]) + ", " + std::to_string(findings) +
                 " findings");
}
BENCHMARK(BM_DoctorInProcess)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

void BM_DoctorProcess(benchmark::State& state) {
  const std::string& root = Tree(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    pid_t pid = ::fork();
    if (pid == 0) {
      std::freopen("/dev/null", "w", stdout);
      ::execl(ACCEL_BINARY, "accel", "doctor", "--root", root.c_str(), "-o", "json",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (rc != 0 && rc != 1 && rc != 4) {  // ok, warnings, failures: a report was written
      state.SkipWithError("accel doctor failed");
      break;
    }
  }
  state.SetLabel(kHosts[state.range(0)]);
}
BENCHMARK(BM_DoctorProcess)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace accel::bench

BENCHMARK_MAIN();
