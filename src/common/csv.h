// CsvTable: a comma-separated file with a header line, read whole, every cell remembering its
// line and column so a bad value is reported where it is ("pods.csv:812:17: ...").
//
// The dialect is the plain one of trace files (Alibaba's cluster traces, exports of
// schedulers): fields separated by commas, no quoting (a double quote anywhere is refused, as is
// a row with a different number of fields than the header), "\n" or "\r\n" line ends, blank
// lines ignored, surrounding spaces of a field kept out. Plain data; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace accel {

struct CsvCell {
  std::string text;  ///< the field, spaces around it removed
  int line = 0;      ///< 1-based line in the file
  int column = 0;    ///< 1-based column (byte) where the field starts
};

struct CsvTable {
  std::string path;                        ///< the file, as given (for messages)
  std::vector<std::string> header;         ///< column names, in file order
  std::vector<std::vector<CsvCell>> rows;  ///< rows after the header, each header.size() cells

  /// Index of column `name` in header, or -1.
  int Column(std::string_view name) const;
  /// Column(name), throwing InputError naming the file and the columns it has when absent.
  int RequireColumn(std::string_view name) const;

  /// The cell's text as a whole number in [lo, hi]. Throws InputError "path:line:column" naming
  /// the column when it is not one.
  int64_t Integer(const CsvCell& cell, std::string_view column, int64_t lo, int64_t hi) const;
  /// "path:line:column" of a cell.
  std::string Where(const CsvCell& cell) const;
};

/// Parses CSV `text` read from `path`. Throws InputError naming path, line and column for a
/// quote, a row of the wrong width, an empty or duplicate header name, or an empty file.
CsvTable ParseCsv(const std::string& text, const std::string& path);

/// Reads and parses the file at `path` (at most `max_bytes`). Throws InputError when it cannot
/// be read or parsed.
CsvTable ReadCsvFile(const std::string& path, uint64_t max_bytes = uint64_t{1} << 30);

}  // namespace accel
