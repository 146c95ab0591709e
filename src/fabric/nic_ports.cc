#include "fabric/nic_ports.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "common/strings.h"
#include "fabric/path.h"

namespace accel::fabric {
namespace {

namespace fs = std::filesystem;

// First line of a sysfs attribute, trimmed; "" when missing or unreadable (unset GID
// entries fail with EINVAL on real machines).
std::string ReadLine(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  size_t start = 0;
  while (start < line.size() && std::isspace(static_cast<unsigned char>(line[start]))) ++start;
  return line.substr(start);
}

// "4: ACTIVE" → "ACTIVE"; "5: LinkUp" → "LinkUp"; text without a number stays as is.
std::string StripStateNumber(const std::string& text) {
  size_t colon = text.find(':');
  if (colon == std::string::npos) return text;
  for (size_t i = 0; i < colon; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return text;
  }
  size_t start = colon + 1;
  while (start < text.size() && text[start] == ' ') ++start;
  return text.substr(start);
}

// "400 Gb/sec (4X NDR)" → 400; "" or garbage → 0.
double ParseRate(const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  double value = std::strtod(begin, &end);
  return end == begin || !(value > 0) ? 0 : value;
}

// Entries of a directory, sorted by name; empty when it cannot be listed.
std::vector<fs::path> List(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Canonical PCI address of the function a sysfs link points at; "" when it does not resolve.
std::string LinkedPciAddress(const fs::path& link) {
  std::error_code ec;
  fs::path real = fs::canonical(link, ec);
  if (ec) return "";
  return CanonicalPciAddress(real.filename().string());
}

std::string PortNetdev(const fs::path& port_dir, const fs::path& device_dir, int port) {
  for (const fs::path& entry : List(port_dir / "gid_attrs" / "ndevs")) {
    std::string name = ReadLine(entry);
    if (!name.empty()) return name;
  }
  std::vector<fs::path> nets = List(device_dir / "net");
  for (const fs::path& net : nets) {
    std::string dev_port = ReadLine(net / "dev_port");
    if (!dev_port.empty() && std::atoi(dev_port.c_str()) == port - 1) return net.filename().string();
  }
  return nets.size() == 1 ? nets[0].filename().string() : "";
}

bool HasRoceV2Gid(const fs::path& port_dir) {
  for (const fs::path& entry : List(port_dir / "gid_attrs" / "types")) {
    std::string type = ReadLine(entry);
    std::transform(type.begin(), type.end(), type.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (type == "roce v2") return true;
  }
  return false;
}


}  // namespace

std::vector<NicPort> ReadNicPorts(const std::string& root) {
  std::vector<NicPort> out;
  fs::path class_dir = fs::path(root.empty() ? "/" : root) / "sys" / "class" / "infiniband";
  for (const fs::path& dev_dir : List(class_dir)) {
    std::string name = dev_dir.filename().string();
    fs::path device = dev_dir / "device";
    std::string address = LinkedPciAddress(device);
    std::string physfn;
    std::error_code ec;
    if (fs::exists(device / "physfn", ec)) physfn = LinkedPciAddress(device / "physfn");
    for (const fs::path& port_dir : List(dev_dir / "ports")) {
      std::string number = port_dir.filename().string();
      if (number.empty() ||
          !std::all_of(number.begin(), number.end(), [](unsigned char c) { return std::isdigit(c); })) {
        continue;
      }
      NicPort port;
      port.rdma_device = name;
      port.port = std::atoi(number.c_str());
      port.pci_address = address;
      port.state = StripStateNumber(ReadLine(port_dir / "state"));
      port.phys_state = StripStateNumber(ReadLine(port_dir / "phys_state"));
      port.link_layer = ReadLine(port_dir / "link_layer");
      port.rate_gbps = ParseRate(ReadLine(port_dir / "rate"));
      port.netdev = PortNetdev(port_dir, device, port.port);
      port.roce_v2_gid = port.link_layer == "Ethernet" && HasRoceV2Gid(port_dir);
      port.physfn = physfn;
      out.push_back(std::move(port));
    }
  }
  std::sort(out.begin(), out.end(), [](const NicPort& a, const NicPort& b) {
    if (a.rdma_device != b.rdma_device) return NaturalLess(a.rdma_device, b.rdma_device);
    return a.port < b.port;
  });
  return out;
}

}  // namespace accel::fabric
