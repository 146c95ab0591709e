// exporter_bench: what a scrape of `accel exporter` costs, measured from outside the process the
// way Prometheus sees it (see docs/benchmarks.md, "Exporter").
//
//   exporter_bench --accel build/accel --fake-nvml build/tests/fakes/nvml/libnvidia-ml.so.1
//       --config tests/fakes/nvml/examples/h100x8-all-mig.json [--scrapes 100000] [--hang-gpu N]
//
// --hang-gpu N: GPU N's power call hangs forever from 5 s after start (once the exporter is up),
// so scrapes are measured while a collection pass is stuck in the vendor library. This is the
// number tests/cli/exporter_cli_test.cc LostAndHungGpusDoNotStopTheOthers used to bound (50
// scrapes in 2 s); the test now checks only that the scrapes are answered.
//
// It starts a fake kubelet (64 pods on the MIG instances), starts `accel exporter` on the fake
// NVML, then scrapes /metrics over loopback with keep-alive: latency p50/p99 (plain and gzip),
// exporter CPU per scrape (from /proc/<pid>/stat, idle collection CPU subtracted), collection
// CPU per device and pass, and the exporter's RSS every 10,000 scrapes.
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "support/child_process.h"
#include "support/fake_kubelet.h"

namespace {

using Clock = std::chrono::steady_clock;
using accel::test_support::ChildProcess;

struct Args {
  std::string accel, fake_nvml, config;
  long scrapes = 100000;
  int pods = 64;
  int hang_gpu = -1;  ///< GPU whose power call hangs forever after start; -1 = none
};

/// utime + stime of `pid` in seconds.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; fields >> f; ++i) {
    if (i == 14) utime = std::stoull(f);
    if (i == 15) { stime = std::stoull(f); break; }
  }
  return double(utime + stime) / double(sysconf(_SC_CLK_TCK));
}

/// A "Vm..." line of /proc/<pid>/status, in KiB.
long StatusKib(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  }
  return -1;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

/// A minimal HTTP/1.1 keep-alive client on a raw socket, so the numbers are the exporter's and
/// not a client library's (httplib's client reads in 4 KiB steps and costs milliseconds on a
/// 500 KB body; Prometheus' Go client does not).
class RawClient {
 public:
  explicit RawClient(int port) : port_(port), buffer_(8 << 20) {}
  ~RawClient() { Close(); }

  /// GET /metrics; returns the body length (compressed length with gzip), or -1 on error.
  long Get(bool gzip) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (fd_ < 0 && !Connect()) return -1;
      std::string request = std::string("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n") +
                            (gzip ? "Accept-Encoding: gzip\r\n" : "") + "\r\n";
      if (send(fd_, request.data(), request.size(), MSG_NOSIGNAL) == ssize_t(request.size())) {
        long n = ReadResponse();
        if (n >= 0) return n;
      }
      Close();  // the server closed a kept-alive connection; retry once on a new one
    }
    return -1;
  }

 private:
  bool Connect() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(uint16_t(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int yes = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      Close();
      return false;
    }
    return true;
  }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  long ReadResponse() {
    size_t have = 0, header_end = std::string::npos;
    while (header_end == std::string::npos) {
      ssize_t r = recv(fd_, buffer_.data() + have, buffer_.size() - have, 0);
      if (r <= 0) return -1;
      have += size_t(r);
      header_end = std::string_view(buffer_.data(), have).find("\r\n\r\n");
    }
    std::string_view head(buffer_.data(), header_end);
    size_t at = head.find("Content-Length: ");
    if (head.substr(0, 12) != "HTTP/1.1 200" || at == std::string::npos) return -1;
    size_t length = std::stoul(std::string(head.substr(at + 16, 12)));
    bool close_after = head.find("Connection: close") != std::string::npos;
    size_t total = header_end + 4 + length;
    while (have < total) {
      ssize_t r = recv(fd_, buffer_.data(), std::min(buffer_.size(), total - have), 0);
      if (r <= 0) return -1;
      have += size_t(r);
    }
    if (close_after) Close();
    return long(length);
  }

  int port_;
  int fd_ = -1;
  std::vector<char> buffer_;
};

/// Times `n` GETs of /metrics; returns microseconds per call.
std::vector<double> Scrape(RawClient& client, long n, bool gzip, size_t* bytes) {
  std::vector<double> us;
  us.reserve(n);
  for (long i = 0; i < n; ++i) {
    Clock::time_point t0 = Clock::now();
    long got = client.Get(gzip);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (got < 0) {
      std::cerr << "scrape failed\n";
      std::exit(1);
    }
    *bytes = size_t(got);
  }
  return us;
}

Args ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--accel") a.accel = v;
    else if (k == "--fake-nvml") a.fake_nvml = v;
    else if (k == "--config") a.config = v;
    else if (k == "--scrapes") a.scrapes = std::stol(v);
    else if (k == "--pods") a.pods = std::stoi(v);
    else if (k == "--hang-gpu") a.hang_gpu = std::stoi(v);
  }
  if (a.accel.empty() || a.fake_nvml.empty() || a.config.empty()) {
    std::cerr << "usage: exporter_bench --accel PATH --fake-nvml PATH --config JSON "
                 "[--scrapes N] [--pods N] [--hang-gpu N]\n";
    std::exit(2);
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = ParseArgs(argc, argv);
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("accel-exporter-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  if (args.hang_gpu >= 0) {
    std::ifstream in(args.config);
    nlohmann::json config = nlohmann::json::parse(in);
    nlohmann::json& gpu = config.at("devices").at(size_t(args.hang_gpu));
    if (!gpu.contains("faults")) gpu["faults"] = nlohmann::json::array();
    gpu["faults"].push_back({{"function", "nvmlDeviceGetPowerUsage"}, {"hang_ms", "forever"},
                             {"after_ms", 5000}});
    args.config = (dir / "nvml-hung.json").string();
    std::ofstream(args.config) << config.dump();
  }
  accel::test_support::FakeKubelet kubelet((dir / "kubelet.sock").string());
  int port = accel::test_support::FreeLoopbackPort();
  ChildProcess exporter(
      {args.accel, "exporter", "--vendors", "nvidia", "--nvml-library", args.fake_nvml,
       "--web.listen-address", "127.0.0.1:" + std::to_string(port), "--collect-interval", "1s",
       "--pod-resources-socket", (dir / "kubelet.sock").string(), "--pod-refresh-interval", "1s",
       "--topology", "none"},
      {{"FAKE_NVML_CONFIG", args.config}, {"NODE_NAME", "bench-node"}},
      (dir / "exporter.log").string());
  httplib::Client client("127.0.0.1", port);
  client.set_keep_alive(true);
  std::string body;
  bool up = accel::test_support::WaitUntil(
      [&] {
        auto r = client.Get("/metrics");
        if (r && r->status == 200) body = r->body;
        return r && r->status == 200;
      },
      std::chrono::seconds(20));
  if (!up) {
    std::cerr << "exporter did not come up:\n" << exporter.Log();
    return 1;
  }

  // Pods on the MIG instances the exporter reports.
  std::set<std::string> mig_uuids;
  std::regex mig_re("mig_uuid=\"(MIG-[^\"]+)\"");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), mig_re); it != std::sregex_iterator(); ++it) {
    mig_uuids.insert((*it)[1]);
  }
  std::vector<std::string> ids(mig_uuids.begin(), mig_uuids.end());
  if (ids.empty()) {
    std::cerr << "no MIG instances in the exposition; is the config all-MIG?\n";
    return 1;
  }
  std::vector<accel::kube::ContainerDevices> pods;
  for (int i = 0; i < args.pods; ++i) {
    pods.push_back({"team-" + std::to_string(i % 4), "bench-" + std::to_string(i), "main",
                    "nvidia.com/mig-1g.10gb", {ids[size_t(i) % ids.size()]}});
  }
  kubelet.SetPods(pods);
  std::string last_pod = "pod=\"bench-" + std::to_string(args.pods - 1) + "\"";
  accel::test_support::WaitUntil(
      [&] {
        auto r = client.Get("/metrics");
        return r && r->body.find(last_pod) != std::string::npos;
      },
      std::chrono::seconds(20));

  pid_t pid = exporter.pid();
  RawClient raw(port);
  size_t plain_bytes = 0, gzip_bytes = 0;
  Scrape(raw, 2000, false, &plain_bytes);  // warm-up
  long rss_start = StatusKib(pid, "VmRSS");

  // Idle baseline: collection only, no scrapes.
  double idle_window = 10;
  double cpu0 = CpuSeconds(pid);
  std::this_thread::sleep_for(std::chrono::duration<double>(idle_window));
  double idle_cpu_per_s = (CpuSeconds(pid) - cpu0) / idle_window;

  long timed = std::min<long>(args.scrapes, 20000);
  Clock::time_point t0 = Clock::now();
  cpu0 = CpuSeconds(pid);
  std::vector<double> plain = Scrape(raw, timed, false, &plain_bytes);
  double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  double scrape_cpu = CpuSeconds(pid) - cpu0 - idle_cpu_per_s * wall;
  std::vector<double> gz = Scrape(raw, timed, true, &gzip_bytes);

  std::vector<std::pair<long, long>> rss;
  rss.emplace_back(0, StatusKib(pid, "VmRSS"));
  for (long done = 0; done < args.scrapes;) {
    long n = std::min<long>(10000, args.scrapes - done);
    size_t b = 0;
    Scrape(raw, n, (done / 10000) % 2 == 1, &b);
    done += n;
    rss.emplace_back(done, StatusKib(pid, "VmRSS"));
  }
  long hwm = StatusKib(pid, "VmHWM");
  long anon = StatusKib(pid, "RssAnon"), file = StatusKib(pid, "RssFile");

  auto r = client.Get("/metrics");
  std::smatch m;
  std::string pass = "?";
  std::regex pass_re("accel_exporter_collection_duration_seconds\\{[^}]*\\} ([0-9.e+-]+)");
  if (r && std::regex_search(r->body, m, pass_re)) pass = m[1];
  size_t devices = 8, instances = ids.size();

  std::printf("exposition: %zu bytes plain, %zu bytes gzip; %zu GPUs, %zu MIG instances, %d pods\n",
              plain_bytes, gzip_bytes, devices, instances, args.pods);
  if (args.hang_gpu >= 0)
    std::printf("GPU %d: its power call hangs forever from 5 s after start (--hang-gpu)\n", args.hang_gpu);
  std::printf("scrape latency plain (n=%ld): p50 %.0f us, p99 %.0f us, max %.0f us\n", timed,
              Percentile(plain, 0.5), Percentile(plain, 0.99), Percentile(plain, 1.0));
  std::printf("scrape latency gzip  (n=%ld): p50 %.0f us, p99 %.0f us, max %.0f us\n", timed,
              Percentile(gz, 0.5), Percentile(gz, 0.99), Percentile(gz, 1.0));
  std::printf("exporter CPU per scrape: %.1f us (idle collection subtracted)\n",
              1e6 * scrape_cpu / double(timed));
  std::printf("collection: %.2f ms CPU per second at a 1 s interval = %.0f us per device per pass"
              " (%zu GPUs, %zu MIG instances); last pass wall %s s\n",
              1e3 * idle_cpu_per_s, 1e6 * idle_cpu_per_s / double(devices), devices, instances,
              pass.c_str());
  std::printf("RSS (KiB) by scrapes done:");
  for (auto [n, kib] : rss) std::printf(" %ld:%ld", n, kib);
  std::printf("\nRSS start %ld KiB, end %ld KiB, peak (VmHWM) %ld KiB; at the end %ld KiB private"
              " (RssAnon) + %ld KiB shared library pages (RssFile)\n",
              rss_start, rss.back().second, hwm, anon, file);
  exporter.Stop(SIGTERM, std::chrono::seconds(5));
  std::filesystem::remove_all(dir);
  return 0;
}
