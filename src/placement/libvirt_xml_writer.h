// XmlWriter: a tiny indenting XML writer for libvirt documents, with correct escaping.
//
// It writes elements in the order they are opened, two spaces per level, attributes in
// single quotes (as `virsh dumpxml` does). Every attribute value and text is escaped, so any
// string (a flavor name with & < > ' ", control characters, broken UTF-8) gives well-formed
// XML. Not synchronized: one writer per document.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace accel::placement {

/// Attributes of one element, written in this order.
using XmlAttrs = std::vector<std::pair<std::string, std::string>>;

/// Returns `text` escaped for element content: & < > become entities; characters XML 1.0
/// cannot carry at all (C0 controls other than tab/LF/CR, invalid UTF-8) become U+FFFD.
std::string EscapeXmlText(std::string_view text);

/// Returns `value` escaped for an attribute in either quote style: like EscapeXmlText plus
/// ' and " as entities, and tab/LF/CR as character references (so attribute-value
/// normalization by the reader keeps them).
std::string EscapeXmlAttribute(std::string_view value);

class XmlWriter {
 public:
  /// Writes `<name attrs>` and enters it; pair with Close().
  void Open(std::string_view name, const XmlAttrs& attrs = {});
  /// Writes the empty element `<name attrs/>`.
  void Empty(std::string_view name, const XmlAttrs& attrs = {});
  /// Writes `<name attrs>text</name>` on one line.
  void Text(std::string_view name, std::string_view text, const XmlAttrs& attrs = {});
  /// Closes the innermost open element. Does nothing when none is open.
  void Close();
  /// Closes whatever is still open and returns the document (ends with a newline).
  std::string Finish();

 private:
  void StartTag(std::string_view name, const XmlAttrs& attrs);

  std::string out_;
  std::vector<std::string> open_;  // names of open elements, outermost first
};

}  // namespace accel::placement
