// Checks generated Kubernetes objects against the real CRD schemas and built-in OpenAPI documents
// in ../shared/crds (shared/crds/validate.py, Debian's python3-yaml and python3-jsonschema).
//
//   TEST(VendorStack, ObjectsValidate) {
//     ACCEL_REQUIRE_CRD_VALIDATOR();
//     const test_support::CrdResult r = test_support::ValidateObjects(yaml_text, "vendor-stack");
//     EXPECT_EQ(r.exit_code, 0) << r.output;
//   }
//
// validate.py exits 0 when every document is valid, 1 on schema errors, 2 when a file is
// unreadable or a kind has no schema there. Header only; needs ACCEL_SHARED_DIR.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/shared_fixture.h"

namespace accel::test_support {

/// shared/crds/validate.py.
inline std::string CrdValidatorPath() { return SharedPath("crds/validate.py"); }

/// What validate.py said about one file.
struct CrdResult {
  int exit_code = -1;  ///< 0 valid, 1 schema errors, 2 unreadable/unknown kind, -1 could not run
  std::string output;  ///< its stdout and stderr together
};

/// Writes `yaml` (one or more documents) to a temporary file named after `label` and runs
/// validate.py on it.
inline CrdResult ValidateObjects(const std::string& yaml, const std::string& label) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("accel-crd-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / (label + ".yaml");
  {
    std::ofstream out(file);
    out << yaml;
  }
  CrdResult r;
  const std::string cmd = "python3 '" + CrdValidatorPath() + "' '" + file.string() + "' 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::filesystem::remove(file);
  return r;
}

}  // namespace accel::test_support

/// Skips (as an absent shared fixture) when ../shared/crds/validate.py is not there; a missing
/// python3-jsonschema is a failure of the test instead (setup.sh installs it).
#define ACCEL_REQUIRE_CRD_VALIDATOR() ACCEL_REQUIRE_SHARED(::accel::test_support::CrdValidatorPath())
