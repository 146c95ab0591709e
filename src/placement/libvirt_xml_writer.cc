#include "placement/libvirt_xml_writer.h"

#include <cstdint>

namespace accel::placement {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

// Length of the well-formed UTF-8 sequence at s[i] that XML 1.0 may carry, or 0 when the bytes
// there are not one (a stray continuation byte, an overlong form, a surrogate, U+FFFE/U+FFFF,
// or a truncated sequence).
size_t ValidUtf8Length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) -> uint8_t { return i + k < s.size() ? uint8_t(s[i + k]) : 0; };
  auto cont = [&](size_t k) { return (byte(k) & 0xC0) == 0x80; };
  const uint8_t b0 = byte(0);
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (b0 == 0xE0 && byte(1) < 0xA0) return 0;   // overlong
    if (b0 == 0xED && byte(1) >= 0xA0) return 0;  // UTF-16 surrogate
    if (b0 == 0xEF && byte(1) == 0xBF && byte(2) >= 0xBE) return 0;  // U+FFFE, U+FFFF
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (b0 == 0xF0 && byte(1) < 0x90) return 0;   // overlong
    if (b0 == 0xF4 && byte(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

// The escape for an ASCII character, or "" when it is written as is.
std::string_view AsciiEscape(char c, bool attribute) {
  switch (c) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '\'': return attribute ? "&apos;" : "'";
    case '"': return attribute ? "&quot;" : "\"";
    case '\t': return attribute ? "&#9;" : "\t";
    case '\n': return attribute ? "&#10;" : "\n";
    case '\r': return "&#13;";  // a raw CR would be folded into LF by the reader
    default: break;
  }
  if (uint8_t(c) < 0x20) return kReplacement;  // C0 controls are not allowed in XML 1.0
  return "";
}

std::string Escape(std::string_view s, bool attribute) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t len = ValidUtf8Length(s, i);
    if (len == 0) {  // skip one bad byte; the next byte may start a valid sequence
      out += kReplacement;
      ++i;
      continue;
    }
    if (len == 1) {
      std::string_view esc = AsciiEscape(s[i], attribute);
      if (esc.empty()) out += s[i];
      else out += esc;
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace

std::string EscapeXmlText(std::string_view text) { return Escape(text, false); }
std::string EscapeXmlAttribute(std::string_view value) { return Escape(value, true); }

void XmlWriter::StartTag(std::string_view name, const XmlAttrs& attrs) {
  out_.append(2 * open_.size(), ' ');
  out_ += '<';
  out_ += name;
  for (const auto& [key, value] : attrs) {
    out_ += ' ';
    out_ += key;
    out_ += "='";
    out_ += EscapeXmlAttribute(value);
    out_ += '\'';
  }
}

void XmlWriter::Open(std::string_view name, const XmlAttrs& attrs) {
  StartTag(name, attrs);
  out_ += ">\n";
  open_.emplace_back(name);
}

void XmlWriter::Empty(std::string_view name, const XmlAttrs& attrs) {
  StartTag(name, attrs);
  out_ += "/>\n";
}

void XmlWriter::Text(std::string_view name, std::string_view text, const XmlAttrs& attrs) {
  StartTag(name, attrs);
  out_ += '>';
  out_ += EscapeXmlText(text);
  out_ += "</";
  out_ += name;
  out_ += ">\n";
}

void XmlWriter::Close() {
  if (open_.empty()) return;
  std::string name = std::move(open_.back());
  open_.pop_back();
  out_.append(2 * open_.size(), ' ');
  out_ += "</" + name + ">\n";
}

std::string XmlWriter::Finish() {
  while (!open_.empty()) Close();
  return std::move(out_);
}

}  // namespace accel::placement
