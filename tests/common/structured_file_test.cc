#include "common/structured_file.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace accel {
namespace structured_file_test {

TEST(ReadWholeFile, EndlessFilesStopAtTheCap) {
  // /dev/zero has no size to check up front; the reader must still stop at 64 MiB.
  EXPECT_THROW(ReadWholeFile("/dev/zero"), InputError);
}

TEST(ReadWholeFile, DirectoriesAndMissingFilesAreInputErrors) {
  EXPECT_THROW(ReadWholeFile("/"), InputError);
  EXPECT_THROW(ReadWholeFile("/nonexistent/accel.json"), InputError);
}

}  // namespace
}  // namespace accel
