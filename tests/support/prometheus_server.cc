#include "support/prometheus_server.h"

#include <httplib.h>
#include <signal.h>

#include <fstream>
#include <stdexcept>

namespace accel::test_support {

PrometheusServer::PrometheusServer(const std::string& dir, const std::string& job,
                                   const std::vector<std::string>& targets,
                                   std::chrono::milliseconds scrape_interval,
                                   const std::string& extra_yaml) {
  std::string interval = std::to_string(scrape_interval.count()) + "ms";
  std::string config = "global:\n  scrape_interval: " + interval +
                       "\n  evaluation_interval: " + interval + "\nscrape_configs:\n  - job_name: " +
                       job + "\n    scrape_timeout: " + interval + "\n    static_configs:\n      - targets: [";
  for (size_t i = 0; i < targets.size(); ++i) config += (i ? ", \"" : "\"") + targets[i] + "\"";
  config += "]\n" + extra_yaml;
  std::ofstream(dir + "/prometheus.yml") << config;
  port_ = FreeLoopbackPort();
  process_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{kPrometheusBinary, "--config.file=" + dir + "/prometheus.yml",
                               "--storage.tsdb.path=" + dir + "/data",
                               "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                               "--log.level=warn"},
      std::map<std::string, std::string>{}, dir + "/prometheus.log");
  httplib::Client client("127.0.0.1", port_);
  bool ready = WaitUntil(
      [&] {
        auto r = client.Get("/-/ready");
        return r && r->status == 200;
      },
      std::chrono::seconds(120));
  if (!ready) throw std::runtime_error("prometheus did not become ready:\n" + process_->Log());
}

PrometheusServer::~PrometheusServer() { process_->Stop(SIGTERM, std::chrono::seconds(10)); }

nlohmann::json PrometheusServer::Query(const std::string& promql) {
  httplib::Client client("127.0.0.1", port_);
  auto r = client.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
  if (!r) throw std::runtime_error("prometheus query failed: no response");
  nlohmann::json body = nlohmann::json::parse(r->body, nullptr, false);
  if (body.is_discarded() || body.value("status", "") != "success") {
    throw std::runtime_error("prometheus refused '" + promql + "': " + r->body);
  }
  return body["data"]["result"];
}

nlohmann::json PrometheusServer::QueryUntilData(const std::string& promql,
                                                std::chrono::milliseconds timeout) {
  nlohmann::json result = nlohmann::json::array();
  WaitUntil(
      [&] {
        result = Query(promql);
        return !result.empty();
      },
      timeout);
  return result;
}

}  // namespace accel::test_support
