// Checkpoint: round trip, a corrupt file set aside, writes that fail leave the entries alone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "common/error.h"
#include "dra/checkpoint.h"

namespace accel::dra {
namespace checkpoint_test {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("accel-checkpoint-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

CheckpointEntry Entry() {
  CheckpointEntry e;
  e.namespace_ = "team-a";
  e.name = "train-0";
  e.cdi_spec_path = "/var/run/cdi/k8s.accel.io-claim_uid-1.json";
  PreparedDevice d;
  d.request_names = {"gpu", "pair/gpu"};
  d.pool_name = "node-1";
  d.device_name = "gpu-0";
  d.cdi_device_ids = {"k8s.accel.io/claim=uid-1-gpu-0"};
  e.devices = {d};
  return e;
}

TEST_F(CheckpointTest, RoundTripAcrossInstances) {
  {
    Checkpoint c(dir_.string());
    EXPECT_FALSE(c.Get("uid-1"));
    c.Put("uid-1", Entry());
    c.Put("uid-2", CheckpointEntry{"ns", "empty", {}, ""});
  }
  Checkpoint again(dir_.string());
  ASSERT_TRUE(again.Get("uid-1"));
  EXPECT_EQ(*again.Get("uid-1"), Entry());
  EXPECT_EQ(again.Entries().size(), 2u);
  again.Erase("uid-1");
  again.Erase("uid-1");  // idempotent
  again.Erase("never");
  EXPECT_EQ(Checkpoint(dir_.string()).Entries().size(), 1u);
}

TEST_F(CheckpointTest, JsonIsStable) {
  std::map<std::string, CheckpointEntry> m{{"uid-1", Entry()}};
  EXPECT_EQ(ParseCheckpoint(CheckpointJson(m), "x"), m);
  EXPECT_EQ(CheckpointJson(m), CheckpointJson(ParseCheckpoint(CheckpointJson(m), "x")));
}

TEST_F(CheckpointTest, CorruptFileIsSetAsideNeverFatal) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "checkpoint.json") << "{\"version\": 1, \"claims\": {\"uid-1\": {\"dev";
  std::vector<std::string> logs;
  Checkpoint c(dir_.string(), [&](const std::string& l) { logs.push_back(l); });
  EXPECT_TRUE(c.Entries().empty());
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_THAT(logs[0], HasSubstr("cannot be read"));
  EXPECT_THAT(logs[0], HasSubstr("checkpoint.json.corrupt"));
  EXPECT_TRUE(fs::exists(dir_ / "checkpoint.json.corrupt"));
  EXPECT_FALSE(fs::exists(dir_ / "checkpoint.json"));
  c.Put("uid-1", Entry());  // and it works from there
  EXPECT_TRUE(Checkpoint(dir_.string()).Get("uid-1"));
}

TEST_F(CheckpointTest, WrongShapesAreInputErrors) {
  for (const char* text :
       {"", "[]", "{}", "{\"version\": 2}", "{\"version\": \"1\"}",
        "{\"version\": 1, \"claims\": []}", "{\"version\": 1, \"claims\": {\"u\": 1}}",
        "{\"version\": 1, \"claims\": {\"\": {}}}",
        "{\"version\": 1, \"claims\": {\"u\": {\"devices\": {}}}}",
        "{\"version\": 1, \"claims\": {\"u\": {\"devices\": [{\"cdiDeviceIds\": [1]}]}}}",
        "{\"version\": 1, \"claims\": {\"u\": {\"name\": false}}}"}) {
    EXPECT_THROW(ParseCheckpoint(text, "checkpoint.json"), InputError) << text;
  }
  EXPECT_TRUE(ParseCheckpoint("{\"version\": 1}", "x").empty());
}

TEST_F(CheckpointTest, FailedWriteKeepsEntries) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "not a directory";
  Checkpoint c((dir_ / "file" / "state").string());
  EXPECT_THROW(c.Put("uid-1", Entry()), SystemError);
  EXPECT_FALSE(c.Get("uid-1"));
}

}  // namespace
}  // namespace accel::dra
