// Plain-text tables for `-o table` output: columns padded to their widest cell, two spaces
// apart, the first row being the header. Stateless.
#pragma once

#include <string>
#include <vector>

namespace accel::cli {

/// Rows of cells (the first is the header) as aligned lines, each ending in '\n'. Rows shorter
/// than the header are padded with empty cells.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace accel::cli
