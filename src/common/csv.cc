#include "common/csv.h"

#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

#include "common/error.h"

namespace accel {

namespace {

std::string_view Trim(std::string_view s, size_t* lead) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t')) --b;
  *lead = a;
  return s.substr(a, b - a);
}

}  // namespace

int CsvTable::Column(std::string_view name) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}

int CsvTable::RequireColumn(std::string_view name) const {
  const int c = Column(name);
  if (c >= 0) return c;
  std::string have;
  for (const std::string& h : header) have += (have.empty() ? "" : ",") + h;
  throw InputError(path + ":1", std::string(name), "is not a column of this file (its header: " + have + ")",
                   "give a file whose first line names the column");
}

std::string CsvTable::Where(const CsvCell& cell) const {
  return path + ":" + std::to_string(cell.line) + ":" + std::to_string(cell.column);
}

int64_t CsvTable::Integer(const CsvCell& cell, std::string_view column, int64_t lo, int64_t hi) const {
  int64_t v = 0;
  const char* first = cell.text.data();
  const char* last = first + cell.text.size();
  auto [end, ec] = std::from_chars(first, last, v);
  if (cell.text.empty() || ec != std::errc() || end != last)
    throw InputError(Where(cell), std::string(column), "is '" + cell.text + "', not a whole number",
                     "write a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
  if (v < lo || v > hi)
    throw InputError(Where(cell), std::string(column), "is " + cell.text + ", out of range",
                     "write a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
  return v;
}

CsvTable ParseCsv(const std::string& text, const std::string& path) {
  CsvTable t;
  t.path = path;
  int line = 0;
  size_t pos = 0;
  bool have_header = false;
  std::set<std::string> names;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view row(text.data() + pos, end - pos);
    const size_t next = end + 1;
    ++line;
    if (!row.empty() && row.back() == '\r') row.remove_suffix(1);
    pos = next;
    size_t lead = 0;
    if (Trim(row, &lead).empty()) continue;
    if (const size_t q = row.find('"'); q != std::string_view::npos)
      throw InputError(path + ":" + std::to_string(line) + ":" + std::to_string(q + 1), "",
                       "has a double quote; quoted fields are not read",
                       "write plain comma-separated values (no quotes, no commas inside fields)");
    std::vector<CsvCell> cells;
    size_t start = 0;
    while (true) {
      const size_t comma = row.find(',', start);
      const std::string_view field = row.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      const std::string_view trimmed = Trim(field, &lead);
      cells.push_back({std::string(trimmed), line, static_cast<int>(start + lead + 1)});
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (!have_header) {
      for (const CsvCell& c : cells) {
        if (c.text.empty())
          throw InputError(path + ":" + std::to_string(line) + ":" + std::to_string(c.column), "", "the header has an empty column name",
                           "name every column in the first line");
        if (!names.insert(c.text).second)
          throw InputError(path + ":" + std::to_string(line) + ":" + std::to_string(c.column), c.text,
                           "is a column name twice in the header", "name each column once");
        t.header.push_back(c.text);
      }
      have_header = true;
      continue;
    }
    if (cells.size() != t.header.size())
      throw InputError(path + ":" + std::to_string(line), "",
                       "has " + std::to_string(cells.size()) + " fields, the header " + std::to_string(t.header.size()),
                       "give every row one field per header column");
    t.rows.push_back(std::move(cells));
  }
  if (!have_header) throw InputError(path, "", "is empty (no header line)", "give a CSV file whose first line names the columns");
  return t;
}

CsvTable ReadCsvFile(const std::string& path, uint64_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot be read", "check the path");
  std::ostringstream buf;
  buf << in.rdbuf();
  std::string text = buf.str();
  if (text.size() > max_bytes)
    throw InputError(path, "", "is larger than " + std::to_string(max_bytes) + " bytes", "split it");
  return ParseCsv(text, path);
}

}  // namespace accel
