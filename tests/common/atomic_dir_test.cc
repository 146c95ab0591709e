// WriteDirectoryAtomically: creates, replaces as a whole (old files gone), refuses bad relative
// paths and a target that is a file, and leaves no temporary directory behind.
#include "common/atomic_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace accel {
namespace atomic_dir_test {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int Entries(const fs::path& dir) {
  int n = 0;
  for (auto it = fs::directory_iterator(dir); it != fs::directory_iterator(); ++it) ++n;
  return n;
}

TEST(AtomicDir, CreatesReplacesAndCleansUp) {
  const fs::path base = fs::temp_directory_path() / ("accel-atomic-dir-" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base);
  const fs::path out = base / "plan";
  WriteDirectoryAtomically(out.string(), {{"a.txt", "one"}, {"sub/dir/b.json", "{}"}});
  EXPECT_EQ(Read(out / "a.txt"), "one");
  EXPECT_EQ(Read(out / "sub/dir/b.json"), "{}");
  WriteDirectoryAtomically(out.string(), {{"c.txt", "two"}});
  EXPECT_FALSE(fs::exists(out / "a.txt"));
  EXPECT_FALSE(fs::exists(out / "sub"));
  EXPECT_EQ(Read(out / "c.txt"), "two");
  EXPECT_EQ(Entries(base), 1) << "a temporary directory was left beside the target";

  EXPECT_THROW(WriteDirectoryAtomically(out.string(), {{"../escape.txt", "x"}}), InputError);
  EXPECT_THROW(WriteDirectoryAtomically(out.string(), {{"/abs.txt", "x"}}), InputError);
  EXPECT_EQ(Read(out / "c.txt"), "two") << "a refused write changed the target";
  std::ofstream(base / "file") << "x";
  EXPECT_THROW(WriteDirectoryAtomically((base / "file").string(), {{"a", "b"}}), InputError);
  fs::remove_all(base);
}

}  // namespace
}  // namespace accel
