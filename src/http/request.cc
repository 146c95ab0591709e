#include "http/request.h"
#include "common/strings.h"

#include <charconv>

namespace accel::http {
namespace {

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// Whether `s` equals `lower` (already lower case), ignoring the case of `s`.
bool EqualsLower(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (Lower(s[i]) != lower[i]) return false;
  }
  return true;
}

bool StartsWithLower(std::string_view s, std::string_view lower) {
  return s.size() >= lower.size() && EqualsLower(s.substr(0, lower.size()), lower);
}

// RFC 9110 optional white space around field values.
std::string_view TrimOws(std::string_view s) { return Trim(s, " \t"); }

// RFC 9110 tchar.
bool IsTokenChar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-':
    case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// field-value bytes: HTAB, visible ASCII, SP, obs-text. No CR, LF, NUL or other controls.
bool IsFieldValue(std::string_view s) {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\t') continue;
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

// Takes the line starting at `*pos` (without its LF and an LF's preceding CR) and moves `*pos`
// past it. Returns false when no LF follows.
bool NextLine(std::string_view text, size_t* pos, std::string_view* line) {
  const size_t lf = text.find('\n', *pos);
  if (lf == std::string_view::npos) return false;
  size_t end = lf;
  if (end > *pos && text[end - 1] == '\r') --end;
  *line = text.substr(*pos, end - *pos);
  *pos = lf + 1;
  return true;
}

size_t SkipEmptyLines(std::string_view text) {
  size_t pos = 0;
  for (;;) {
    if (text.substr(pos, 2) == "\r\n") {
      pos += 2;
    } else if (text.substr(pos, 1) == "\n") {
      pos += 1;
    } else {
      return pos;
    }
  }
}

// The path of a request-target, or an empty view when the target has no form we accept.
std::string_view TargetPath(std::string_view target) {
  if (target == "*") return target;
  if (target.front() == '/') return target.substr(0, target.find('?'));
  size_t after_scheme;
  if (StartsWithLower(target, "http://")) {
    after_scheme = 7;
  } else if (StartsWithLower(target, "https://")) {
    after_scheme = 8;
  } else {
    return {};
  }
  std::string_view rest = target.substr(after_scheme);
  const size_t slash = rest.find_first_of("/?");
  if (slash == 0) return {};  // no authority
  if (slash == std::string_view::npos || rest[slash] == '?') return "/";
  rest.remove_prefix(slash);
  return rest.substr(0, rest.find('?'));
}

// "METHOD SP request-target SP HTTP/1.x", single spaces, nothing else.
HeadError ParseRequestLine(std::string_view line, RequestHead* head) {
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return HeadError::kBadRequestLine;
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return HeadError::kBadRequestLine;
  head->method = line.substr(0, sp1);
  head->target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(head->method) || head->target.empty()) return HeadError::kBadRequestLine;
  for (char ch : head->target) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f) return HeadError::kBadRequestLine;
  }
  head->path = TargetPath(head->target);
  if (head->path.empty()) return HeadError::kBadRequestLine;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !digit(version[5]) ||
      version[6] != '.' || !digit(version[7])) {
    return HeadError::kBadRequestLine;
  }
  if (version[5] != '1') return HeadError::kUnsupportedVersion;
  head->minor_version = version[7] - '0';
  return HeadError::kNone;
}

void ParseConnection(std::string_view value, RequestHead* head) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    const std::string_view option = TrimOws(value.substr(0, comma));
    if (EqualsLower(option, "close")) head->connection_close = true;
    if (EqualsLower(option, "keep-alive")) head->connection_keep_alive = true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

HeadError ParseContentLength(std::string_view value, RequestHead* head) {
  // 18 digits cannot overflow; no request body is anywhere near that.
  if (value.empty() || value.size() > 18) return HeadError::kBadContentLength;
  uint64_t n = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return HeadError::kBadContentLength;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  if (head->has_content_length && head->content_length != n) return HeadError::kBadContentLength;
  head->has_content_length = true;
  head->content_length = n;
  return HeadError::kNone;
}

HeadError ParseField(std::string_view line, RequestHead* head) {
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return HeadError::kBadHeaderField;
  const std::string_view name = line.substr(0, colon);
  const std::string_view value = TrimOws(line.substr(colon + 1));
  // A space before the colon is refused, not trimmed (RFC 9112 section 5.1).
  if (!IsToken(name) || !IsFieldValue(value)) return HeadError::kBadHeaderField;
  if (++head->field_count > kMaxHeaderFields) return HeadError::kTooManyFields;

  if (EqualsLower(name, "host")) {
    if (head->has_host) return HeadError::kDuplicateField;
    head->has_host = true;
  } else if (EqualsLower(name, "authorization")) {
    if (!head->authorization.empty()) return HeadError::kDuplicateField;
    head->authorization = value;
  } else if (EqualsLower(name, "accept-encoding")) {
    head->accepts_gzip = head->accepts_gzip || AcceptsGzip(value);
  } else if (EqualsLower(name, "connection")) {
    ParseConnection(value, head);
  } else if (EqualsLower(name, "content-length")) {
    return ParseContentLength(value, head);
  } else if (EqualsLower(name, "transfer-encoding")) {
    head->has_transfer_encoding = true;
  }
  return HeadError::kNone;
}

}  // namespace

size_t FindHeadEnd(std::string_view buffer) {
  size_t pos = SkipEmptyLines(buffer);
  std::string_view line;
  if (!NextLine(buffer, &pos, &line)) return 0;  // the request line
  while (NextLine(buffer, &pos, &line)) {
    if (line.empty()) return pos;
  }
  return 0;
}

HeadError ParseRequestHead(std::string_view text, RequestHead* head) {
  *head = RequestHead{};
  size_t pos = SkipEmptyLines(text);
  std::string_view line;
  if (!NextLine(text, &pos, &line)) return HeadError::kIncomplete;
  if (HeadError e = ParseRequestLine(line, head); e != HeadError::kNone) return e;
  for (;;) {
    if (!NextLine(text, &pos, &line)) return HeadError::kIncomplete;
    if (line.empty()) break;
    if (line.front() == ' ' || line.front() == '\t') return HeadError::kObsoleteLineFolding;
    if (HeadError e = ParseField(line, head); e != HeadError::kNone) return e;
  }
  if (pos != text.size()) return HeadError::kIncomplete;  // bytes after the head's end
  if (head->minor_version >= 1 && !head->has_host) return HeadError::kMissingHost;
  return HeadError::kNone;
}

int HeadErrorStatus(HeadError error) {
  switch (error) {
    case HeadError::kNone:
      return 200;
    case HeadError::kTooManyFields:
      return 431;
    case HeadError::kUnsupportedVersion:
      return 505;
    default:
      return 400;
  }
}

const char* HeadErrorText(HeadError error) {
  switch (error) {
    case HeadError::kNone: return "ok";
    case HeadError::kIncomplete: return "incomplete request head";
    case HeadError::kBadRequestLine: return "malformed request line";
    case HeadError::kUnsupportedVersion: return "HTTP version not supported";
    case HeadError::kBadHeaderField: return "malformed header field";
    case HeadError::kObsoleteLineFolding: return "obsolete line folding";
    case HeadError::kTooManyFields: return "too many header fields";
    case HeadError::kBadContentLength: return "invalid Content-Length";
    case HeadError::kDuplicateField: return "duplicate Host or Authorization field";
    case HeadError::kMissingHost: return "missing Host field";
  }
  return "bad request";
}

bool AcceptsGzip(std::string_view header) {
  for (;;) {
    const size_t comma = header.find(',');
    const std::string_view item = header.substr(0, comma);
    const size_t semi = item.find(';');
    const std::string_view name = TrimOws(item.substr(0, semi));
    if (EqualsLower(name, "gzip") || EqualsLower(name, "x-gzip") || name == "*") {
      if (semi == std::string_view::npos) return true;
      const std::string_view params = item.substr(semi + 1);
      const size_t q = params.find("q=");
      if (q == std::string_view::npos) return true;
      std::string_view number = TrimOws(params.substr(q + 2));
      if (!number.empty() && number.front() == '+') number.remove_prefix(1);
      double value = 0;
      std::from_chars(number.data(), number.data() + number.size(), value);
      if (value > 0) return true;
    }
    if (comma == std::string_view::npos) return false;
    header.remove_prefix(comma + 1);
  }
}

}  // namespace accel::http
