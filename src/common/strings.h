// Small string helpers that several layers need the same way. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace accel {

/// `items` joined with `sep` between them ("" for none): {"a","b"}, ", " → "a, b".
std::string JoinStrings(const std::vector<std::string>& items, std::string_view sep);

/// Natural order of device and interface names: digit runs compare as numbers, so
/// "mlx5_2" < "mlx5_10" and "cpu9" < "cpu10"; otherwise byte order. A strict weak order.
bool NaturalLess(std::string_view a, std::string_view b);

}  // namespace accel
