#include "cli/help.h"

#include <sstream>

namespace accel::cli {

std::string FirstSentence(const std::string& description) {
  size_t end = description.size();
  for (const char* stop : {". ", ".\n", "\n\n"}) {
    size_t at = description.find(stop);
    if (at != std::string::npos && at < end) end = at;
  }
  std::string line = description.substr(0, end);
  if (!line.empty() && line.back() == '.') line.pop_back();
  for (char& c : line) {
    if (c == '\n') c = ' ';
  }
  return line;
}

std::string SummaryFormatter::make_subcommand(const CLI::App* sub) const {
  // The summaries are the top-level commands'; `accel fleet place` is not `accel place`.
  const bool top_level = sub->get_parent() != nullptr && sub->get_parent()->get_parent() == nullptr;
  auto known = top_level ? summaries_.find(sub->get_name()) : summaries_.end();
  std::string summary =
      known != summaries_.end() ? known->second : FirstSentence(sub->get_description());
  std::stringstream out;
  CLI::detail::format_help(out, sub->get_display_name(true), summary, get_column_width());
  return out.str();
}

}  // namespace accel::cli
