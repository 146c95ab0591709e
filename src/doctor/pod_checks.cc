// GDR-09: what a Kubernetes pod needs around the GPUs and NICs for RDMA and NCCL — the memlock
// limit (or CAP_IPC_LOCK) for memory registration, the verbs and RDMA-CM device nodes, a
// /dev/shm large enough for NCCL's shared-memory transport, and an IP interface for NCCL's
// bootstrap besides the RDMA netdevs. Read from this process's view (/proc/self), so run inside
// a pod of the training image to see what its pods get. See docs/doctor.md.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
#include <sstream>

#include "doctor/doctor_internal.h"

namespace accel::doctor {

namespace {

constexpr unsigned long long kGiB = 1ull << 30;
constexpr int kCapIpcLock = 14;  // linux/capability.h

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// A tmpfs size= option: "65536k", "8g", "1073741824"; std::nullopt for percentages and junk
// (the kernel prints k, so the rest is for copied trees).
std::optional<unsigned long long> TmpfsSize(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string unit = text.substr(used);
  if (unit.empty()) return v;
  switch (std::tolower(static_cast<unsigned char>(unit[0]))) {
    case 'k': return v << 10;
    case 'm': return v << 20;
    case 'g': return v << 30;
    case 't': return v << 40;
    default: return std::nullopt;
  }
}

// MemTotal from /proc/meminfo in bytes; 0 when unknown.
unsigned long long MemTotal(const Context& ctx) {
  FileValue meminfo = ReadFile(ctx.root, "/proc/meminfo", 64 * 1024);
  for (const std::string& line : Lines(meminfo.value)) {
    unsigned long long kib = 0;
    if (std::sscanf(line.c_str(), "MemTotal: %llu kB", &kib) == 1) return kib << 10;
  }
  return 0;
}

// One part of the verdict: its severity, the sentence, and its fix lines.
struct Part {
  Severity severity = Severity::kOk;
  std::string text;
  std::string fix;
};

Part CheckMemlock(const Context& ctx, std::vector<Evidence>* evidence) {
  FileValue limits = ReadFile(ctx.root, "/proc/self/limits");
  std::string soft, hard;
  for (const std::string& line : Lines(limits.value)) {
    if (line.rfind("Max locked memory", 0) != 0) continue;
    std::vector<std::string> w = Words(line.substr(17));
    if (w.size() >= 2) {
      soft = w[0];
      hard = w[1];
    }
    evidence->push_back({limits.path, "Max locked memory " + soft + " " + hard});
  }
  if (soft.empty()) {
    if (!limits.ok) evidence->push_back(limits.ToEvidence());
    return {Severity::kInfo, "could not read the memlock limit", ""};
  }
  if (soft == "unlimited") return {Severity::kOk, "memlock unlimited", ""};
  // CAP_IPC_LOCK lifts the limit for verbs memory registration as for mlock.
  FileValue status = ReadFile(ctx.root, "/proc/self/status", 64 * 1024);
  for (const std::string& line : Lines(status.value)) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    evidence->push_back({status.path, line});
    std::vector<std::string> w = Words(line.substr(7));
    if (w.empty()) break;
    try {
      unsigned long long caps = std::stoull(w[0], nullptr, 16);
      if (caps & (1ull << kCapIpcLock))
        return {Severity::kOk, "memlock " + soft + " bytes, but CAP_IPC_LOCK lifts it", ""};
    } catch (const std::exception&) {
    }
    break;
  }
  std::optional<long long> bytes = ParseNumber(soft);
  std::string limit = bytes ? SizeText(static_cast<unsigned long long>(*bytes)) : soft;
  return {Severity::kWarn,
          "memlock limit " + limit +
              " without CAP_IPC_LOCK: NCCL's RDMA memory registrations fail once they pass it "
              "(ibv_reg_mr: Cannot allocate memory)",
          "pod: securityContext: {capabilities: {add: [\"IPC_LOCK\"]}}   # lifts the limit\n"
          "or raise the limit pods inherit: LimitMEMLOCK=infinity for containerd/cri-o "
          "(systemctl edit containerd), docker --ulimit memlock=-1:-1;\n"
          "shells: ulimit -l unlimited (/etc/security/limits.d: * - memlock unlimited)"};
}

Part CheckDevices(const Context& ctx, std::vector<Evidence>* evidence) {
  std::vector<std::string> names = ListDir(ctx.root, "/dev/infiniband");
  evidence->push_back({"/dev/infiniband", names.empty() ? "(missing or empty)" : JoinList(names, 12)});
  int uverbs = 0;
  bool rdma_cm = false;
  for (const std::string& n : names) {
    uverbs += n.rfind("uverbs", 0) == 0;
    rdma_cm |= n == "rdma_cm";
  }
  std::set<std::string> devices;
  for (const fabric::NicPort& p : ctx.ports) devices.insert(p.rdma_device);
  size_t expected = devices.empty() ? ctx.rdma_pfs.size() : devices.size();
  const std::string plugin_fix =
      "pod: request the RDMA devices from a device plugin (resources.limits, e.g. rdma/<pool> of\n"
      "the RDMA shared device plugin or an SR-IOV VF resource): it mounts /dev/infiniband/uverbsN\n"
      "and rdma_cm; node: modprobe ib_uverbs rdma_ucm";
  if (uverbs == 0)
    return {Severity::kFail,
            "no /dev/infiniband/uverbs*: NCCL finds no RDMA device here and falls back to TCP "
            "sockets (NET/Socket)",
            plugin_fix};
  if (!rdma_cm)
    return {Severity::kWarn,
            "no /dev/infiniband/rdma_cm: RDMA-CM users (UCX, MPI, NVMe-oF) cannot connect",
            "node: modprobe rdma_ucm; pod: the RDMA device plugins mount rdma_cm with the devices"};
  if (static_cast<size_t>(uverbs) < expected)
    return {Severity::kInfo,
            std::to_string(uverbs) + " of " + std::to_string(expected) +
                " RDMA devices have a uverbs node: a device plugin mounts only the allocated "
                "ones; NCCL_IB_HCA should name those",
            ""};
  return {Severity::kOk, std::to_string(uverbs) + " uverbs nodes and rdma_cm", ""};
}

Part CheckShm(const Context& ctx, std::vector<Evidence>* evidence) {
  FileValue mounts = ReadFile(ctx.root, "/proc/mounts", 4 << 20);
  if (!mounts.ok) {
    evidence->push_back(mounts.ToEvidence());
    return {Severity::kInfo, "could not read /proc/mounts for /dev/shm", ""};
  }
  std::vector<std::string> shm;  // the last /dev/shm mount is the visible one
  for (const std::string& line : Lines(mounts.value)) {
    std::vector<std::string> w = Words(line);
    if (w.size() >= 4 && w[1] == "/dev/shm") shm = w;
  }
  const unsigned long long want = ctx.accelerators.size() * kGiB;
  const std::string gib = std::to_string(ctx.accelerators.size()) + "Gi";
  const std::string fix =
      "pod: volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: " + gib +
      "}}] and volumeMounts: [{name: dshm, mountPath: /dev/shm}]; docker: --shm-size=" +
      std::to_string(ctx.accelerators.size()) + "g";
  if (shm.empty()) {
    evidence->push_back({mounts.path, "(no /dev/shm mount)"});
    return {Severity::kWarn,
            "/dev/shm is not a tmpfs mount: NCCL's shared-memory transport and data loaders "
            "need one",
            fix};
  }
  std::string line = shm[0] + " " + shm[1] + " " + shm[2] + " " + shm[3];
  evidence->push_back({mounts.path, line});
  if (shm[2] != "tmpfs")
    return {Severity::kWarn, "/dev/shm is " + shm[2] + ", not tmpfs", fix};
  std::optional<unsigned long long> size;
  bool half_of_ram = true;
  std::istringstream opts(shm[3]);
  for (std::string opt; std::getline(opts, opt, ',');) {
    if (opt.rfind("size=", 0) != 0) continue;
    half_of_ram = false;
    size = TmpfsSize(opt.substr(5));
  }
  if (half_of_ram) {
    // tmpfs without size= gets half of RAM.
    unsigned long long total = MemTotal(ctx);
    if (total > 0) size = total / 2;
  }
  if (!size) return {Severity::kInfo, "could not tell the size of /dev/shm", ""};
  std::string shown = SizeText(*size);
  if (*size < want)
    return {Severity::kWarn,
            "/dev/shm is " + shown + " for " + std::to_string(ctx.accelerators.size()) +
                " accelerators (want 1 GiB each): NCCL's shared-memory transport and data "
                "loaders fail with \"No space left on device\" or a bus error",
            fix};
  return {Severity::kOk, "/dev/shm " + shown, ""};
}

Part CheckSocketInterface(const Context& ctx, std::vector<Evidence>* evidence) {
  std::set<std::string> rdma_netdevs;
  for (const topology::PciDevice& d : ctx.host->pci)
    if (d.is_rdma()) rdma_netdevs.insert(d.netdevs.begin(), d.netdevs.end());
  for (const fabric::NicPort& p : ctx.ports)
    if (!p.netdev.empty()) rdma_netdevs.insert(p.netdev);
  std::vector<std::string> other, rdma_up;
  for (const std::string& name : ListDir(ctx.root, "/sys/class/net")) {
    // NCCL's default filter skips lo and docker*; veth/virbr are host-side plumbing.
    if (name == "lo" || name.rfind("docker", 0) == 0 || name.rfind("veth", 0) == 0 ||
        name.rfind("virbr", 0) == 0)
      continue;
    FileValue state = ReadFile(ctx.root, "/sys/class/net/" + name + "/operstate");
    if (state.ok && state.value == "down") continue;
    (rdma_netdevs.count(name) ? rdma_up : other).push_back(name);
  }
  evidence->push_back({"/sys/class/net", "up, not RDMA: " + (other.empty() ? "(none)" : JoinList(other, 6)) +
                                             "; RDMA netdevs: " +
                                             (rdma_up.empty() ? "(none)" : JoinList(rdma_up, 6))});
  if (!other.empty())
    return {Severity::kOk, "socket interface " + other.front() + " for NCCL's bootstrap", ""};
  if (!rdma_up.empty())
    return {Severity::kInfo,
            "no IP interface besides the RDMA netdevs (" + JoinList(rdma_up, 4) +
                "): NCCL's bootstrap and out-of-band exchange run over them",
            "set NCCL_SOCKET_IFNAME to the interface that carries the pod network (e.g. eth0), "
            "or to the RDMA netdevs on purpose"};
  return {Severity::kWarn,
          "no network interface besides lo: NCCL cannot bootstrap (\"NET/IB : No IP interface "
          "found\")",
          "give the pod a network interface (hostNetwork or a CNI attachment) and set "
          "NCCL_SOCKET_IFNAME to it"};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
Finding CheckGdr09PodPlumbing(const Context& ctx) {
  const char* id = "GDR-09";
  const char* title = "pod plumbing for RDMA and NCCL";
  if (ctx.options->role != Role::kK8sNode)
    return MakeFinding(id, title, Severity::kNotApplicable,
                       "pod plumbing is checked with --role k8s-node (best from inside a pod of "
                       "the training image)");
  bool rdma = !ctx.rdma_pfs.empty() || !ctx.ports.empty();
  if (ctx.accelerators.empty() && !rdma)
    return MakeFinding(id, title, Severity::kNotApplicable, "no accelerators and no RDMA NIC");
  std::vector<Evidence> evidence;
  std::vector<Part> parts;
  if (rdma) {
    parts.push_back(CheckMemlock(ctx, &evidence));
    parts.push_back(CheckDevices(ctx, &evidence));
  }
  if (!ctx.accelerators.empty()) parts.push_back(CheckShm(ctx, &evidence));
  if (rdma) parts.push_back(CheckSocketInterface(ctx, &evidence));

  Severity sev = Severity::kOk;
  for (const Part& p : parts) sev = std::max(sev, p.severity);
  std::string summary, fix;
  for (const Part& p : parts) {
    // Only the parts that need attention when something does; everything when all is well.
    if (sev > Severity::kOk && p.severity == Severity::kOk) continue;
    summary += (summary.empty() ? "" : "; ") + p.text;
    if (!p.fix.empty()) fix += (fix.empty() ? "" : "\n") + p.fix;
  }
  Finding f = MakeFinding(id, title, sev, summary);
  f.fix = fix;
  f.evidence = std::move(evidence);
  return f;
}

}  // namespace accel::doctor
