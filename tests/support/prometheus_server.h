// PrometheusServer: a real Prometheus (Debian's /usr/bin/prometheus) started by a test on
// loopback, scraping the targets the test names, queried through its HTTP API.
//
// Not thread-safe; one owner. Stops the server (SIGTERM) on destruction.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/child_process.h"

namespace accel::test_support {

inline constexpr const char* kPrometheusBinary = "/usr/bin/prometheus";

class PrometheusServer {
 public:
  /// Starts Prometheus with storage in `dir` scraping `targets` ("127.0.0.1:PORT") as job
  /// `job` every `scrape_interval`, plus any extra YAML appended to the config (e.g. rule_files).
  /// Waits until /-/ready answers; throws std::runtime_error (with the server's log) otherwise.
  PrometheusServer(const std::string& dir, const std::string& job,
                   const std::vector<std::string>& targets,
                   std::chrono::milliseconds scrape_interval, const std::string& extra_yaml = "");
  ~PrometheusServer();

  /// Instant query. Returns data.result (a JSON array, possibly empty); throws
  /// std::runtime_error with the API's error text when the query is refused.
  nlohmann::json Query(const std::string& promql);

  /// Polls Query(promql) until it returns a non-empty result or `timeout` passes.
  nlohmann::json QueryUntilData(const std::string& promql, std::chrono::milliseconds timeout);

  int port() const { return port_; }
  std::string Log() const { return process_->Log(); }

 private:
  int port_ = 0;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace accel::test_support
