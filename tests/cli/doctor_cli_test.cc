// `accel doctor` as a user runs it: flags, output formats, exit codes, bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "cli/cli_test_util.h"
#include "common/error.h"
#include "support/healthy_host_tree.h"

namespace accel::doctor {
namespace doctor_cli_test {

using cli::testing::RunAccel;
using cli::testing::Src;
using namespace testing;

class DoctorCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = SharedHgxRoot();
    plain_ = new TempRoot("cli-plain");
    topology::HostTopology devbox = Fixture("devbox");
    std::erase_if(devbox.pci, [](const topology::PciDevice& d) { return d.is_accelerator(); });
    WriteHealthyHost(devbox, plain_->path());
  }
  static void TearDownTestSuite() { delete plain_; }
  static std::string root_;  // shared healthy HGX H100 tree; tests undo their changes
  static TempRoot* plain_;
  TreeEditor edit_{root_};
};
std::string DoctorCliTest::root_;
TempRoot* DoctorCliTest::plain_ = nullptr;

TEST_F(DoctorCliTest, HealthyHostExitsZeroWithAHeadline) {
  auto r = RunAccel("doctor --root " + root_);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("accel doctor: hgx-h100 (role bare-metal):"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--verbose shows them"), std::string::npos) << r.output;
  auto v = RunAccel("doctor --root " + root_ + " --verbose");
  EXPECT_NE(v.output.find("[OK] GDR-01 peer memory for GPUDirect RDMA"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("/sys/module/nvidia_peermem/version = 550.54.15"), std::string::npos);
}

// deploy/kubernetes/accel-doctor-job.yaml's command line is one accel accepts: run it with the
// host mount pointed at the fake tree.
TEST_F(DoctorCliTest, KubernetesJobCommandRuns) {
  std::vector<YAML::Node> docs = YAML::LoadAllFromFile(Src("deploy/kubernetes/accel-doctor-job.yaml"));
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0]["kind"].as<std::string>(), "Job");
  YAML::Node command = docs[0]["spec"]["template"]["spec"]["containers"][0]["command"];
  ASSERT_TRUE(command.IsSequence());
  std::string args;
  for (size_t i = 1; i < command.size(); ++i) {  // [0] is the binary
    std::string a = command[i].as<std::string>();
    args += " " + (a == "/host" ? root_ : a);
  }
  EXPECT_NE(args.find("--root " + root_), std::string::npos) << args;
  auto r = RunAccel(args.substr(1), false);
  ASSERT_EQ(r.exit_code, 0) << args << "\n" << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["role"], "k8s-node");
}

TEST_F(DoctorCliTest, JsonHasEveryFinding) {
  auto r = RunAccel("doctor --root " + root_ + " -o json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json doc = nlohmann::json::parse(r.output);
  EXPECT_EQ(doc["schema"], "accel.doctor/v1");
  EXPECT_EQ(doc["hostname"], "hgx-h100");
  EXPECT_EQ(doc["findings"].size(), 21u);
  EXPECT_EQ(doc["findings"][0]["id"], "GDR-01");
  EXPECT_EQ(doc["exit_code"], 0);
  EXPECT_TRUE(doc["findings"][0]["evidence"].is_array());
}

TEST_F(DoctorCliTest, FailuresExitFour) {
  edit_.Remove("sys/module/nvidia_peermem/version");
  auto r = RunAccel("doctor --root " + root_);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.output.find("[FAIL] GDR-01"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("modprobe nvidia-peermem"), std::string::npos);
  // A warning alone exits 1.
  edit_.Restore();
  edit_.Set("proc/sys/kernel/numa_balancing", "1\n");
  EXPECT_EQ(RunAccel("doctor --root " + root_).exit_code, 1);
}

TEST_F(DoctorCliTest, NoAcceleratorsIsNotApplicableAndExitsZero) {
  auto r = RunAccel("doctor --root " + plain_->path() + " -o json", false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json doc = nlohmann::json::parse(r.output);
  for (const auto& f : doc["findings"]) {
    if (f["id"] == "GDR-01" || f["id"] == "GDR-02" || f["id"] == "HOST-08") {
      EXPECT_EQ(f["severity"], "n/a") << f.dump();
    }
  }
}

TEST_F(DoctorCliTest, BadInputExitsTwo) {
  for (const char* args :
       {"--role nonsense", "--gdr-level FAR", "-o yaml", "--flavors /nonexistent/flavors.yaml",
        "--root /nonexistent-root-dir", "--no-such-flag"}) {
    auto r = RunAccel("doctor --root " + root_ + " " + std::string(args));
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
  }
  auto r = RunAccel("doctor --root " + root_ + " --gdr-level FAR");
  EXPECT_NE(r.output.find("accel doctor: --gdr-level: unknown level \"FAR\""), std::string::npos)
      << r.output;
}

TEST_F(DoctorCliTest, GdrLevelAcceptsNcclSyntax) {
  EXPECT_EQ(RunAccel("doctor --root " + root_ + " --gdr-level phb").exit_code, 0);
  EXPECT_NO_THROW(CheckGdrLevel("2"));
  EXPECT_NO_THROW(CheckGdrLevel(""));
  EXPECT_THROW(CheckGdrLevel("7"), InputError);
}

TEST_F(DoctorCliTest, HelpTeaches) {
  auto r = RunAccel("doctor --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"Examples:", "--role hypervisor --flavors", "Exit status", "--root",
                        "--gdr-level", "GDR-04"})
    EXPECT_NE(r.output.find(s), std::string::npos) << s;
}

TEST_F(DoctorCliTest, FlavorsDirectoryOnAHypervisor) {
  auto r = RunAccel("doctor --root " + root_ +
                    " --role hypervisor --flavors " + Src("examples/flavors") + " -o json", false);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1 || r.exit_code == 4) << r.output;
  nlohmann::json doc = nlohmann::json::parse(r.output);
  EXPECT_EQ(doc["role"], "hypervisor");
  for (const auto& f : doc["findings"]) {
    if (f["id"] == "HOST-01") {
      EXPECT_NE(f["severity"], "n/a") << f.dump();
    }
  }
}

}  // namespace
}  // namespace accel::doctor
