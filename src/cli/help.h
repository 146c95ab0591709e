// How accel's help reads: `accel --help` lists one line per subcommand, grouped by the layer it
// belongs to (as kubectl groups its commands); each subcommand's own --help carries its long
// description, flags and examples.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <memory>
#include <string>

namespace accel::cli {

/// A CLI11 formatter whose subcommand lists show one line per subcommand: for a top-level
/// command its summary from `summaries` (by name) when there is one, else the first sentence of
/// its description.
class SummaryFormatter : public CLI::Formatter {
 public:
  explicit SummaryFormatter(std::map<std::string, std::string> summaries = {})
      : summaries_(std::move(summaries)) {}
  std::string make_subcommand(const CLI::App* sub) const override;

 private:
  std::map<std::string, std::string> summaries_;
};

/// The first sentence of `description` on one line: up to the first ". ", ".\n", or blank
/// line, with line breaks folded to spaces and the final period dropped.
std::string FirstSentence(const std::string& description);

}  // namespace accel::cli
