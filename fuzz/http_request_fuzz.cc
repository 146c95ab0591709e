// libFuzzer target: arbitrary bytes as an HTTP request head, the way http::HttpServer reads one off
// a socket (http::FindHeadEnd on the buffer, then http::ParseRequestHead on the head it measured).
//
// Neither function may crash or read outside the input, a head it accepts must hold together
// (views inside the input, a path for routing, a Host on HTTP/1.1), and http::FindHeadEnd must agree
// with http::ParseRequestHead about where the head ends.
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc -o http_request_fuzz
//     fuzz/http_request_fuzz.cc src/http/request.cc
//   ./http_request_fuzz -max_len=8192 fuzz/corpus/http_request
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "http/request.h"

namespace {

using namespace accel;

void Check(bool ok) {
  if (!ok) std::abort();
}

bool Inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

void CheckHead(const http::RequestHead& h, std::string_view text) {
  Check(!h.method.empty() && Inside(h.method, text));
  Check(!h.target.empty() && Inside(h.target, text));
  Check(!h.path.empty() && (h.path == "/" || Inside(h.path, text)));
  Check(h.path.front() == '/' || h.path == "*");
  Check(h.path.find('?') == std::string_view::npos);
  Check(Inside(h.authorization, text));
  Check(h.authorization.find_first_of("\r\n") == std::string_view::npos);
  Check(h.minor_version >= 0 && h.minor_version <= 9);
  Check(h.minor_version == 0 || h.has_host);
  Check(h.field_count <= http::kMaxHeaderFields);
  Check(h.has_content_length || h.content_length == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  http::RequestHead head;
  // The input as a whole head: parsed or refused, never anything else.
  http::HeadError error = http::ParseRequestHead(input, &head);
  if (error == http::HeadError::kNone) {
    CheckHead(head, input);
    Check(http::FindHeadEnd(input) == input.size());
  }
  Check(http::HeadErrorStatus(error) >= 200 && http::HeadErrorStatus(error) < 600);
  Check(HeadErrorText(error) != nullptr);

  // The input as a socket buffer: the measured head ends with its empty line, and a complete
  // head is never reported as incomplete.
  const size_t end = http::FindHeadEnd(input);
  Check(end <= input.size());
  if (end > 0) {
    const std::string_view text = input.substr(0, end);
    Check(text.back() == '\n');
    error = http::ParseRequestHead(text, &head);
    Check(error != http::HeadError::kIncomplete);
    if (error == http::HeadError::kNone) CheckHead(head, text);
  }
  http::AcceptsGzip(input);
  return 0;
}
