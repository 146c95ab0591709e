// hwloc XML text handling: the v3 → v2 downgrade that lets Debian's hwloc 2.9 read hwloc 3.0
// exports. Works on the text with a small tag scanner (no XML library): hwloc writes one
// element per tag, escapes '<' and '>' in attribute values, and never uses CDATA.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "topology/hwloc_source.h"

namespace accel::topology {

namespace {

// A tag in the text: [begin, end) spans "<...>".
struct Tag {
  size_t begin = 0;
  size_t end = 0;
  std::string_view text;
  bool closing = false;       // "</x>"
  bool self_closing = false;  // "<x/>"
  bool markup = false;        // "<?...?>", "<!...>" (declarations, comments): no nesting
};

// Finds the tag starting at or after `from`; returns false at the end of the text.
bool NextTag(std::string_view xml, size_t from, Tag* tag) {
  size_t begin = xml.find('<', from);
  if (begin == std::string_view::npos) return false;
  if (xml.substr(begin, 4) == "<!--") {
    size_t end = xml.find("-->", begin + 4);
    if (end == std::string_view::npos) return false;
    *tag = Tag{begin, end + 3, xml.substr(begin, end + 3 - begin), false, false, true};
    return true;
  }
  char quote = 0;
  for (size_t i = begin + 1; i < xml.size(); ++i) {
    char c = xml[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '>') {
      Tag t{begin, i + 1, xml.substr(begin, i + 1 - begin)};
      t.closing = t.text.size() > 1 && t.text[1] == '/';
      t.markup = t.text.size() > 1 && (t.text[1] == '?' || t.text[1] == '!');
      t.self_closing = t.text.size() > 2 && t.text[t.text.size() - 2] == '/';
      *tag = t;
      return true;
    }
  }
  return false;
}

bool IsElement(std::string_view tag, std::string_view name) {
  if (tag.size() < name.size() + 2 || tag.substr(1, name.size()) != name) return false;
  char after = tag[name.size() + 1];
  return after == ' ' || after == '\t' || after == '\n' || after == '\r' || after == '>' ||
         after == '/';
}

// The value of attribute `name` in `tag`, with its offset in the tag; npos when absent.
size_t FindAttribute(std::string_view tag, std::string_view name, std::string_view* value) {
  std::string key = " " + std::string(name) + "=\"";
  size_t pos = tag.find(key);
  if (pos == std::string_view::npos) return pos;
  size_t start = pos + key.size();
  size_t end = tag.find('"', start);
  if (end == std::string_view::npos) return std::string_view::npos;
  *value = tag.substr(start, end - start);
  return start;
}

bool ParseUnsigned(std::string_view s, unsigned* out) {
  if (s.empty() || s.size() > 9) return false;
  unsigned v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  *out = v;
  return true;
}

// One text replacement, applied later from the back so offsets stay valid.
struct Edit {
  size_t pos;
  size_t length;
  std::string text;
};

std::string ApplyEdits(std::string xml, std::vector<Edit> edits) {
  for (auto it = edits.rbegin(); it != edits.rend(); ++it)
    xml.replace(it->pos, it->length, it->text);
  return xml;
}

}  // namespace

int MapOsdevTypeV3ToV2(unsigned v3_type, std::string_view name) {
  // STORAGE (1) and MEMORY (2) both become BLOCK, v2's only storage-like type.
  constexpr unsigned kGpu = 4, kCoproc = 8, kNetwork = 16, kOpenFabrics = 32, kDma = 64;
  constexpr int kBlock2 = 0, kGpu2 = 1, kNetwork2 = 2, kOpenFabrics2 = 3, kDma2 = 4, kCoproc2 = 5;
  if (v3_type & kOpenFabrics) return kOpenFabrics2;
  if (v3_type & kNetwork) return kNetwork2;
  if ((v3_type & kGpu) && (v3_type & kCoproc)) {
    bool management = name.substr(0, 4) == "nvml" || name.substr(0, 4) == "rsmi";
    return management ? kGpu2 : kCoproc2;
  }
  if (v3_type & kGpu) return kGpu2;
  if (v3_type & kCoproc) return kCoproc2;
  if (v3_type & kDma) return kDma2;
  return kBlock2;
}

std::string DowngradeHwlocXml(const std::string& xml) {
  std::string_view text = xml;
  std::vector<Edit> edits;
  std::vector<std::string> top_infos;  // <info> elements directly under <topology>
  size_t root_open_end = std::string::npos;
  bool version3 = false;
  int depth = 0;  // elements open around the current tag; <topology> itself is depth 0
  Tag tag;
  for (size_t pos = 0; NextTag(text, pos, &tag); pos = tag.end) {
    if (tag.markup) continue;
    if (tag.closing) {
      --depth;
      continue;
    }
    std::string_view value;
    if (IsElement(tag.text, "topology")) {
      size_t at = FindAttribute(tag.text, "version", &value);
      if (at == std::string_view::npos || value.substr(0, 2) != "3.") return xml;
      version3 = true;
      edits.push_back({tag.begin + at, value.size(), "2.0"});
    } else if (depth == 1 && IsElement(tag.text, "object") && root_open_end == std::string::npos) {
      root_open_end = tag.end;
    } else if (depth == 1 && IsElement(tag.text, "info") && tag.self_closing) {
      top_infos.emplace_back(tag.text);
      edits.push_back({tag.begin, tag.end - tag.begin, ""});
    } else if (IsElement(tag.text, "object")) {
      size_t at = FindAttribute(tag.text, "osdev_type", &value);
      unsigned v3_type = 0;
      if (at != std::string_view::npos && ParseUnsigned(value, &v3_type)) {
        std::string_view name;
        if (FindAttribute(tag.text, "name", &name) == std::string_view::npos) name = {};
        edits.push_back(
            {tag.begin + at, value.size(), std::to_string(MapOsdevTypeV3ToV2(v3_type, name))});
      }
    }
    if (!tag.self_closing) ++depth;
  }
  if (!version3) return xml;
  if (root_open_end != std::string::npos && !top_infos.empty()) {
    std::string moved;
    for (const std::string& info : top_infos) moved += "\n" + info;
    edits.push_back({root_open_end, 0, moved});
  }
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.pos < b.pos; });
  return ApplyEdits(xml, std::move(edits));
}

}  // namespace accel::topology
