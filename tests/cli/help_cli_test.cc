// `accel --help` as a new user reads it: one line per command (its first sentence or summary),
// grouped by layer, every command listed; each command's own help carries its examples and exit codes.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_test_util.h"

namespace accel::cli::testing {
namespace help_cli_test {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(Help, TopLevelListsEveryCommandOnceGroupedByLayer) {
  RunResult r = RunAccel("--help");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> lines = Lines(r.output);
  EXPECT_LE(lines.size(), 40u) << r.output;
  const std::vector<std::string> groups = {"Host and compute:", "Kubernetes node:",
                                           "Multi-node training:", "Monitoring:"};
  size_t last = 0;
  for (const std::string& g : groups) {
    auto at = std::find(lines.begin(), lines.end(), g);
    ASSERT_NE(at, lines.end()) << g << "\n" << r.output;
    size_t index = static_cast<size_t>(at - lines.begin());
    EXPECT_GT(index, last) << g << " out of order";
    last = index;
  }
  for (const char* cmd : {"topo", "place", "claims", "release", "tune", "serve", "mig", "fabric",
                          "doctor", "exporter", "dra"}) {
    int found = 0;
    for (const std::string& line : lines) {
      std::istringstream words(line);
      std::string first;
      words >> first;
      found += first == cmd;
    }
    EXPECT_EQ(found, 1) << cmd << " should be listed once\n" << r.output;
  }
  EXPECT_NE(r.output.find("Exit status"), std::string::npos);
}

TEST(Help, EachCommandHelpHasExamplesAndExitStatus) {
  for (const char* cmd : {"topo", "place", "serve", "fabric pairs", "doctor", "exporter",
                          "mig validate", "tune plan"}) {
    RunResult r = RunAccel(std::string(cmd) + " --help");
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.output.find("Example"), std::string::npos) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("Exit status"), std::string::npos) << cmd << "\n" << r.output;
  }
}

TEST(Help, UnknownCommandIsBadInput) {
  RunResult r = RunAccel("frobnicate");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

}  // namespace
}  // namespace accel::cli::testing
