// hw:mem_page_size: Nova's page size request language.
//
// "small", "large", "any", a bare integer (KiB: "2048"), or a size with a unit as oslo's
// strutils.string_to_bytes reads it in IEC mode: digits, an optional K/M/G/T/P/E prefix with
// optional "i", and a mandatory B (bytes) or b/bit (bits): "2MB", "1GB", "2048KB", "2MiB", "1GiB".
// Like Nova, "2M" or "1G" (no B) are not sizes. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "placement/request.h"

namespace accel::placement {

/// Parses a hw:mem_page_size value. Returns the request on success; throws InputError(where,
/// field, ...) naming the value and the accepted forms (Nova: MemoryPageSizeInvalid) when the
/// value is none of the forms above, is zero, or is not a whole number of KiB.
PageSizeRequest ParsePageSize(std::string_view value, const std::string& where, const std::string& field);

/// "small", "large", "any", "2048 KiB"/"2 MiB"/"1 GiB"-style text for messages; "" for kNone.
std::string PageSizeRequestText(const PageSizeRequest& request);

}  // namespace accel::placement
