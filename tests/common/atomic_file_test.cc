#include "common/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "common/error.h"

namespace accel {
namespace atomic_file_test {

namespace fs = std::filesystem;

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("accel-atomic-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }
  static std::string Read(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  /// Names in the directory other than `keep`.
  std::vector<std::string> Others(const std::string& keep) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().filename() != keep) out.push_back(e.path().filename().string());
    }
    return out;
  }
  fs::path dir_;
};

TEST_F(AtomicFile, WritesAndReplacesLeavingNoTemporaryFile) {
  std::string path = (dir_ / "accel").string();
  WriteFileAtomically(path, "a=1\n");
  EXPECT_EQ(Read(path), "a=1\n");
  WriteFileAtomically(path, "b=2\n");
  EXPECT_EQ(Read(path), "b=2\n");
  EXPECT_TRUE(Others("accel").empty());
}

TEST_F(AtomicFile, ModeIsApplied) {
  std::string path = (dir_ / "secret").string();
  mode_t old = umask(0);
  WriteFileAtomically(path, "x", {.mode = 0600});
  umask(old);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(AtomicFile, CreatesDirectoriesOnlyWhenAsked) {
  std::string path = (dir_ / "features.d" / "accel").string();
  EXPECT_THROW(WriteFileAtomically(path, "x"), SystemError);
  WriteFileAtomically(path, "x", {.create_directories = true});
  EXPECT_EQ(Read(path), "x");
}

TEST_F(AtomicFile, FailureNamesThePathAndTheReason) {
  // A parent that is a plain file fails for root too (ENOTDIR).
  std::ofstream((dir_ / "plain").string()) << "x";
  std::string path = (dir_ / "plain" / "accel").string();
  try {
    WriteFileAtomically(path, "new");
    FAIL() << "expected SystemError";
  } catch (const SystemError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_EQ(e.reason(), "Not a directory") << e.what();
  }
}

TEST_F(AtomicFile, TargetThatIsADirectoryFailsCleanly) {
  // Works as root too: rename(2) cannot replace a non-empty directory with a file. The target
  // stays as it was and no temporary file is left.
  fs::create_directories(dir_ / "accel" / "inside");
  EXPECT_THROW(WriteFileAtomically((dir_ / "accel").string(), "x"), SystemError);
  EXPECT_TRUE(fs::is_directory(dir_ / "accel" / "inside"));
  EXPECT_TRUE(Others("accel").empty()) << "temporary file left behind";
}

// NFD's features.d reader skips hidden files: while a write is in progress the only visible
// name is the target, and readers always see a whole version.
TEST_F(AtomicFile, ConcurrentWritersAndReadersSeeOnlyWholeVersions) {
  std::string path = (dir_ / "accel").string();
  const std::string a(64 * 1024, 'a'), b(64 * 1024, 'b');
  WriteFileAtomically(path, a);
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) WriteFileAtomically(path, (t + i) % 2 ? a : b);
    });
  }
  for (int i = 0; i < 200; ++i) {
    std::string seen = Read(path);
    ASSERT_TRUE(seen == a || seen == b) << "a torn read of " << seen.size() << " bytes";
    for (const auto& e : fs::directory_iterator(dir_)) {
      std::string name = e.path().filename().string();
      ASSERT_TRUE(name == "accel" || name[0] == '.') << name << " is visible to NFD";
    }
  }
  for (auto& w : writers) w.join();
  EXPECT_TRUE(Others("accel").empty());
}

}  // namespace
}  // namespace accel
