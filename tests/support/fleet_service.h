// Test helpers for `accel fleet serve` run as a user runs it: FleetServe starts the real binary on
// an ephemeral port (127.0.0.1:0) and reads the bound port from its log line "(port N)";
// ApiClient calls it over plain HTTP or HTTPS (with basic auth when given) and records every
// exchange; CheckExchanges runs tests/support/openapi_check.py over the records, so every response
// a test saw is checked against docs/fleet-api.yaml.
//
//   test_support::FleetServe serve(ACCEL_BINARY, {"--store", store}, dir + "/serve.log");
//   test_support::ApiClient api("http://127.0.0.1:" + std::to_string(serve.port()));
//   test_support::ApiReply r = api.Get("/api/v1/hosts");
//   ...
//   test_support::SpecCheck check = test_support::CheckExchanges(spec, script, api.exchanges(), dir);
//   EXPECT_TRUE(check.ok) << check.output;
//
// Header-only (it uses ACCEL_* paths only through its arguments). Not thread-safe: one owner each.
#pragma once

#include <httplib.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/child_process.h"

namespace accel::test_support {

/// A running `accel fleet serve --web.listen-address 127.0.0.1:0 ARGS...`.
class FleetServe {
 public:
  /// Starts `binary` fleet serve with `args` (after the listen address), output appended to
  /// `log_path`, and waits up to 60 s (generous: a loaded CI machine; nothing is timed) for the
  /// "(port N)" line. Throws std::runtime_error with the log when the process exits first or the
  /// line never comes.
  FleetServe(const std::string& binary, const std::vector<std::string>& args, const std::string& log_path,
             const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> argv = {binary, "fleet", "serve", "--web.listen-address", "127.0.0.1:0"};
    argv.insert(argv.end(), args.begin(), args.end());
    child_ = std::make_unique<ChildProcess>(argv, env, log_path);
    const std::regex port_line(R"(\(port ([0-9]+)\))");
    const bool up = WaitUntil(
        [&] {
          std::smatch m;
          const std::string log = child_->Log();
          if (std::regex_search(log, m, port_line)) port_ = std::stoi(m[1]);
          return port_ > 0 || !child_->Running();
        },
        std::chrono::seconds(60));
    if (!up || port_ <= 0) {
      const std::string log = child_->Log();
      child_->Stop(SIGKILL, std::chrono::seconds(10));
      throw std::runtime_error("accel fleet serve did not come up:\n" + log);
    }
  }

  /// The bound port.
  int port() const { return port_; }
  /// The process id (for its CPU time in /proc; fleet_bench --http).
  pid_t pid() const { return child_->pid(); }
  /// "http://127.0.0.1:PORT" (or https).
  std::string Url(bool tls = false) const {
    return std::string(tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
  }
  /// The log so far.
  std::string Log() const { return child_->Log(); }
  bool Running() { return child_->Running(); }
  /// SIGTERM and wait (up to 30 s); returns the exit status as ChildProcess::Stop.
  int Stop() { return child_->Stop(SIGTERM, std::chrono::seconds(30)); }

 private:
  std::unique_ptr<ChildProcess> child_;
  int port_ = 0;
};

/// One request and its answer, as openapi_check.py reads it (--batch).
struct ApiReply {
  std::string method;
  std::string path;                      ///< without the query
  std::optional<std::string> request;    ///< the request body to check against the spec, if any
  int status = 0;                        ///< 0: no answer (connection failed); `error` says why
  std::string content_type;
  std::string allow;                     ///< the Allow header, "" when absent
  std::string www_authenticate;          ///< the WWW-Authenticate header, "" when absent
  std::string body;
  std::string error;                     ///< httplib's error when status is 0

  /// The body as JSON (null when it is not JSON).
  nlohmann::json Json() const { return nlohmann::json::parse(body, nullptr, false); }
};

/// An HTTP(S) client of one service that records every exchange.
class ApiClient {
 public:
  /// `base`: "http://127.0.0.1:PORT" or "https://...". With `ca_cert` the server's certificate is
  /// verified against it; with `user` basic auth is sent.
  explicit ApiClient(const std::string& base, const std::string& ca_cert = "", const std::string& user = "",
                     const std::string& password = "")
      : client_(base) {
    client_.set_connection_timeout(std::chrono::seconds(30));
    client_.set_read_timeout(std::chrono::seconds(120));
    if (!ca_cert.empty()) {
      client_.set_ca_cert_path(ca_cert.c_str());
      client_.enable_server_certificate_verification(true);
    }
    if (!user.empty()) client_.set_basic_auth(user, password);
  }

  ApiReply Get(const std::string& target) { return Send("GET", target, std::nullopt, false); }
  ApiReply Head(const std::string& target) { return Send("HEAD", target, std::nullopt, false); }
  ApiReply Delete(const std::string& target) { return Send("DELETE", target, std::nullopt, false); }
  /// POSTs `body` (application/json). With `check_request` the body itself is checked against the
  /// spec's requestBody too (leave it false for deliberately bad bodies).
  ApiReply Post(const std::string& target, const std::string& body, bool check_request = true) {
    return Send("POST", target, body, check_request);
  }
  /// Any other method, with an optional body (not checked against the spec).
  ApiReply Other(const std::string& method, const std::string& target, const std::string& body = "") {
    return Send(method, target, body, false);
  }

  /// Every exchange so far (connection failures are not recorded).
  const std::vector<ApiReply>& exchanges() const { return exchanges_; }

 private:
  ApiReply Send(const std::string& method, const std::string& target, const std::optional<std::string>& body,
                bool check_request) {
    ApiReply r;
    r.method = method;
    r.path = target.substr(0, target.find('?'));
    if (check_request) r.request = body;
    httplib::Request req;
    req.method = method;
    req.path = target;
    if (body) {
      req.body = *body;
      req.set_header("Content-Type", "application/json");
    }
    httplib::Result res = client_.send(req);
    if (!res) {
      r.error = httplib::to_string(res.error());
      return r;
    }
    r.status = res->status;
    r.content_type = res->get_header_value("Content-Type");
    r.allow = res->get_header_value("Allow");
    r.www_authenticate = res->get_header_value("WWW-Authenticate");
    r.body = res->body;
    exchanges_.push_back(r);
    return r;
  }

  httplib::Client client_;
  std::vector<ApiReply> exchanges_;
};

/// What openapi_check.py said about a batch of exchanges.
struct SpecCheck {
  bool ok = false;                 ///< every exchange conforms
  std::string output;              ///< its output: "ok METHOD TEMPLATE STATUS" / "FAIL [i] why" lines
  std::set<std::string> matched;   ///< "METHOD TEMPLATE STATUS" of the exchanges that conform
};

/// Runs `python` `script` `spec` --batch over `exchanges` (written to `dir`/exchanges-N.json).
inline SpecCheck CheckExchanges(const std::string& python, const std::string& script, const std::string& spec,
                                const std::vector<ApiReply>& exchanges, const std::filesystem::path& dir) {
  static int batch = 0;
  nlohmann::json list = nlohmann::json::array();
  for (const ApiReply& r : exchanges) {
    nlohmann::json e = {{"path", r.path},       {"method", r.method}, {"status", r.status},
                        {"content_type", r.content_type}, {"body", r.body}};
    if (!r.allow.empty()) e["allow"] = r.allow;
    if (!r.www_authenticate.empty()) e["www_authenticate"] = r.www_authenticate;
    e["request"] = r.request ? nlohmann::json(*r.request) : nlohmann::json();
    list.push_back(std::move(e));
  }
  const std::filesystem::path file = dir / ("exchanges-" + std::to_string(++batch) + ".json");
  // Bodies are UTF-8 text here (JSON, HTML, SVG, the exposition); replace anything else.
  std::ofstream(file) << list.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
  SpecCheck out;
  const std::string cmd = "'" + python + "' '" + script + "' '" + spec + "' --batch '" + file.string() + "' 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    out.output = "cannot run " + cmd;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.output.append(buf, n);
  const int status = pclose(pipe);
  out.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::istringstream lines(out.output);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("ok ", 0) == 0) out.matched.insert(line.substr(3));
  return out;
}

/// "METHOD TEMPLATE" of every operation in `spec` (openapi_check.py --list-operations).
inline std::set<std::string> SpecOperations(const std::string& python, const std::string& script,
                                            const std::string& spec) {
  std::set<std::string> ops;
  FILE* pipe = popen(("'" + python + "' '" + script + "' '" + spec + "' --list-operations 2>&1").c_str(), "r");
  if (pipe == nullptr) return ops;
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) text.append(buf, n);
  pclose(pipe);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) ops.insert(line);
  return ops;
}

}  // namespace accel::test_support
