// libFuzzer target: arbitrary bytes as what the kubelet sends accel's DRA service — a
// NodePrepareResourcesRequest (v1 wire; v1beta1 is the same wire format) — through the server's
// request handling (PrepareClaims, UnprepareClaims), with a handler that succeeds, fails or throws
// by the claim's uid.
//
// Bytes protobuf refuses are skipped. For a request it accepts, every claim uid must be answered
// (the kubelet retries missing ones forever) and nothing may escape: the target aborts otherwise.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <google/protobuf/stubs/logging.h>

#include "dra/plugin_server.h"

namespace {

namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;

class Handler : public accel::dra::ClaimHandler {
 public:
  accel::dra::PrepareResult Prepare(const accel::dra::ClaimRef& claim) override {
    accel::dra::PrepareResult result;
    if (claim.uid.size() % 3 == 1) throw std::runtime_error("handler bug");
    if (claim.uid.size() % 3 == 2) {
      result.error = "no such device";
      return result;
    }
    result.devices.push_back({{claim.name}, "pool", "gpu-0", {"k8s.accel.io/claim=" + claim.uid}});
    return result;
  }
  std::string Unprepare(const accel::dra::ClaimRef& claim) override {
    if (claim.uid.size() % 3 == 1) throw std::runtime_error("handler bug");
    return claim.uid.size() % 3 == 2 ? "busy" : "";
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Invalid UTF-8 in a string field is a parse failure protobuf also logs; keep the run quiet.
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)quiet;
  drav1::NodePrepareResourcesRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  Handler handler;
  drav1::NodePrepareResourcesResponse prepared;
  accel::dra::PrepareClaims(handler, request, &prepared);
  drav1::NodeUnprepareResourcesRequest unprepare;
  *unprepare.mutable_claims() = request.claims();
  drav1::NodeUnprepareResourcesResponse unprepared;
  accel::dra::UnprepareClaims(handler, unprepare, &unprepared);
  for (const drav1::Claim& c : request.claims()) {
    if (!prepared.claims().contains(c.uid()) || !unprepared.claims().contains(c.uid())) abort();
    const auto& answer = prepared.claims().at(c.uid());
    // A claim that failed carries no devices; one that succeeded carries no error.
    if (!answer.error().empty() && answer.devices_size() != 0) abort();
  }
  return 0;
}
