// ParsePluginConfig: NVIDIA's v1 files (cases after api/config/v1/replicas_test.go and the
// README examples), time-slicing and MPS sharing with NVIDIA's validation, and accel's own
// `health`, `pluginDir` and flags.mpsControlPath.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "kube/plugin_config.h"
#include "kube_fixtures.h"

namespace accel::kube {
namespace kube_config_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using testing::Config;

// (name, replicas) of each shared resource, for compact expectations.
std::vector<std::pair<std::string, int>> Shared(const ReplicatedResources& r) {
  std::vector<std::pair<std::string, int>> out;
  for (const SharedResource& s : r.resources) out.emplace_back(s.name, s.replicas);
  return out;
}

// The InputError of parsing `yaml`; fails the test when it parses.
InputError ErrorOf(const std::string& yaml) {
  try {
    Config(yaml);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "parsed without error:\n" << yaml;
  return InputError("", "", "");
}

TEST(KubeConfig, EmptyDocumentGivesDefaults) {
  PluginConfig c = Config("");
  EXPECT_EQ(c.mig_strategy, MigStrategy::kNone);
  EXPECT_EQ(c.plugin_dir, "/var/lib/kubelet/device-plugins");
  EXPECT_THAT(c.device_list, ElementsAre(DeviceListStrategy::kEnvvar));
  EXPECT_FALSE(c.device_id_index);
  EXPECT_FALSE(c.pass_device_specs);
  EXPECT_EQ(c.cdi_annotation_prefix, "cdi.k8s.io/");
  EXPECT_EQ(c.dev_root, "/");
  EXPECT_EQ(c.replica_policy, ReplicaPolicy::kDistributed);
  EXPECT_TRUE(c.time_slicing.resources.empty());
  EXPECT_TRUE(c.mps.resources.empty());
  EXPECT_EQ(c.sharing_strategy(), SharingStrategy::kNone);
  EXPECT_EQ(c.mps_settings.root, "/run/nvidia/mps");
  EXPECT_EQ(c.mps_settings.control_path, "");
  EXPECT_EQ(c.driver_root, "/");
  EXPECT_TRUE(c.health.enabled);
  EXPECT_EQ(c.health.ignored_xids, (std::set<uint64_t>{13, 31, 43, 45, 68, 109}));
  EXPECT_EQ(c.health.recover_after_seconds, 300);
}

TEST(KubeConfig, NvidiaReadmeTimeSlicingExample) {
  PluginConfig c = Config(R"(
version: v1
flags:
  migStrategy: mixed
  failOnInitError: true
  nvidiaDriverRoot: /
  plugin:
    passDeviceSpecs: true
    deviceListStrategy: [envvar, cdi-annotations]
    deviceIDStrategy: index
    cdiAnnotationPrefix: cdi.example.com/
    sharedDevicesAllocationPolicy: packed
    nvidiaCTKPath: /usr/bin/nvidia-ctk
    containerDriverRoot: /driver-root
  gfd:
    oneshot: false
    sleepInterval: 60s
sharing:
  timeSlicing:
    renameByDefault: true
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 10
    - name: mig-1g.10gb
      replicas: 2
      devices: all
)");
  EXPECT_EQ(c.mig_strategy, MigStrategy::kMixed);
  EXPECT_TRUE(c.pass_device_specs);
  EXPECT_THAT(c.device_list,
              ElementsAre(DeviceListStrategy::kEnvvar, DeviceListStrategy::kCdiAnnotations));
  EXPECT_TRUE(c.device_id_index);
  EXPECT_EQ(c.cdi_annotation_prefix, "cdi.example.com/");
  EXPECT_EQ(c.replica_policy, ReplicaPolicy::kPacked);
  EXPECT_TRUE(c.time_slicing.rename_by_default);
  EXPECT_TRUE(c.time_slicing.fail_requests_greater_than_one);
  // A bare name gets NVIDIA's prefix.
  EXPECT_THAT(Shared(c.time_slicing),
              ElementsAre(Pair("nvidia.com/gpu", 10), Pair("nvidia.com/mig-1g.10gb", 2)));
  EXPECT_EQ(c.sharing_strategy(), SharingStrategy::kTimeSlicing);
  EXPECT_EQ(c.time_slicing.AdvertisedName(c.time_slicing.resources[0]), "nvidia.com/gpu.shared");
}

TEST(KubeConfig, DeviceListStrategyAsStringAndDevRoots) {
  EXPECT_THAT(Config("flags: {plugin: {deviceListStrategy: cdi-cri}}").device_list,
              ElementsAre(DeviceListStrategy::kCdiCri));
  EXPECT_THAT(Config("flags: {plugin: {deviceListStrategy: volume-mounts}}").device_list,
              ElementsAre(DeviceListStrategy::kVolumeMounts));
  // Device nodes follow the driver root unless nvidiaDevRoot says otherwise, as in NVIDIA's.
  EXPECT_EQ(Config("flags: {nvidiaDriverRoot: /run/nvidia/driver}").dev_root,
            "/run/nvidia/driver");
  EXPECT_EQ(Config("flags: {nvidiaDriverRoot: /run/nvidia/driver, nvidiaDevRoot: /}").dev_root,
            "/");
}

TEST(KubeConfig, YamlOneOneBooleansAndNullSections) {
  PluginConfig c = Config("flags:\n  plugin:\n    passDeviceSpecs: yes\nsharing:\nhealth:\n");
  EXPECT_TRUE(c.pass_device_specs);
  EXPECT_TRUE(c.time_slicing.resources.empty());
}

TEST(KubeConfig, HealthSection) {
  PluginConfig c = Config(R"(
health:
  enabled: false
  ignoredXids: [13, 43, 94]
  recoverAfterSeconds: 0
pluginDir: /tmp/plugins
)");
  EXPECT_FALSE(c.health.enabled);
  EXPECT_EQ(c.health.ignored_xids, (std::set<uint64_t>{13, 43, 94}));  // replaces the defaults
  EXPECT_EQ(c.health.recover_after_seconds, 0);
  EXPECT_EQ(c.plugin_dir, "/tmp/plugins");
}

TEST(KubeConfig, ReplicasMustBeAtLeastTwo) {
  for (const char* replicas : {"1", "0", "-1"}) {
    InputError e = ErrorOf(std::string("sharing: {timeSlicing: {resources: [{name: gpu, replicas: ") +
                           replicas + "}]}}");
    EXPECT_EQ(e.field(), "sharing.timeSlicing.resources[0].replicas") << replicas;
    EXPECT_THAT(e.problem(), HasSubstr(">= 2"));
  }
  EXPECT_THAT(ErrorOf("sharing: {timeSlicing: {resources: [{name: gpu, replicas: '4'}]}}").problem(),
              HasSubstr("integer"));
  EXPECT_THAT(ErrorOf("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2.5}]}}").problem(),
              HasSubstr("integer"));
}

TEST(KubeConfig, TimeSlicingEntriesNeedNameReplicasAndResources) {
  EXPECT_EQ(ErrorOf("sharing: {timeSlicing: {resources: [{replicas: 2}]}}").field(),
            "sharing.timeSlicing.resources[0].name");
  EXPECT_EQ(ErrorOf("sharing: {timeSlicing: {resources: [{name: gpu}]}}").field(),
            "sharing.timeSlicing.resources[0].replicas");
  EXPECT_THAT(ErrorOf("sharing: {timeSlicing: {renameByDefault: true}}").problem(),
              HasSubstr("no resources"));
  EXPECT_THAT(ErrorOf("sharing: {timeSlicing: {resources: []}}").problem(),
              HasSubstr("no resources"));
  EXPECT_THAT(ErrorOf("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2}, "
                      "{name: nvidia.com/gpu, replicas: 3}]}}")
                  .problem(),
              HasSubstr("duplicate"));
  EXPECT_THAT(ErrorOf("sharing: {timeSlicing: {resources: [{name: 'GPU!', replicas: 2}]}}").problem(),
              HasSubstr("invalid resource name"));
  std::string long_name(60, 'a');
  EXPECT_THAT(ErrorOf("sharing: {timeSlicing: {resources: [{name: " + long_name +
                      ", replicas: 2}]}}")
                  .problem(),
              HasSubstr("invalid resource name"));
}

TEST(KubeConfig, DeviceSelectionIsNotSupportedYet) {
  for (const char* sharing : {"timeSlicing", "mps"}) {
    for (const char* devices : {"[0, 1]", "2", "['GPU-8f6c']", "['0:1']"}) {
      InputError e = ErrorOf(std::string("sharing: {") + sharing + ": {resources: [{name: gpu, "
                             "replicas: 2, devices: " + devices + "}]}}");
      EXPECT_EQ(e.field(), std::string("sharing.") + sharing + ".resources[0].devices") << devices;
      EXPECT_THAT(e.problem(), HasSubstr("accel does not support per-device selection yet"));
    }
    // "all" is what NVIDIA uses anyway.
    EXPECT_NO_THROW(Config(std::string("sharing: {") + sharing +
                           ": {resources: [{name: gpu, replicas: 2, devices: all}]}}"));
  }
}

TEST(KubeConfig, RenamePerResource) {
  PluginConfig c = Config(R"(
sharing:
  timeSlicing:
    renameByDefault: true
    resources:
    - {name: nvidia.com/gpu, rename: gpu-small, replicas: 4}
    - {name: mig-1g.10gb, replicas: 2}
)");
  ASSERT_EQ(c.time_slicing.resources.size(), 2u);
  // A bare rename gets NVIDIA's prefix; an explicit rename wins over renameByDefault.
  EXPECT_EQ(c.time_slicing.resources[0].rename, "nvidia.com/gpu-small");
  EXPECT_EQ(c.time_slicing.AdvertisedName(c.time_slicing.resources[0]), "nvidia.com/gpu-small");
  EXPECT_EQ(c.time_slicing.AdvertisedName(c.time_slicing.resources[1]),
            "nvidia.com/mig-1g.10gb.shared");
  EXPECT_EQ(Config("sharing: {mps: {resources: [{name: gpu, replicas: 2, rename: gpu-mps}]}}")
                .mps.resources[0]
                .rename,
            "nvidia.com/gpu-mps");

  InputError bad = ErrorOf("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2, "
                           "rename: 'gpu shared'}]}}");
  EXPECT_EQ(bad.field(), "sharing.timeSlicing.resources[0].rename");
  EXPECT_THAT(bad.problem(), HasSubstr("invalid resource name"));
  InputError clash = ErrorOf(R"(
sharing:
  timeSlicing:
    resources:
    - {name: gpu, replicas: 2, rename: mig-1g.10gb.shared}
    - {name: mig-1g.10gb, replicas: 2}
    renameByDefault: true
)");
  EXPECT_EQ(clash.field(), "sharing.timeSlicing.resources[1]");
  EXPECT_THAT(clash.problem(), HasSubstr("advertised as nvidia.com/mig-1g.10gb.shared"));
  // ".shared" must still fit in 63 characters.
  std::string name(52, 'a');
  InputError long_name = ErrorOf("sharing: {timeSlicing: {renameByDefault: true, resources: "
                                 "[{name: " + name + ", replicas: 2}]}}");
  EXPECT_EQ(long_name.field(), "sharing.timeSlicing.resources[0].name");
}

TEST(KubeConfig, MpsAsNvidiaDocumentsIt) {
  // The README's example: failRequestsGreaterThanOne is true for MPS unless the file says so.
  PluginConfig c = Config(R"(
version: v1
sharing:
  mps:
    resources:
    - name: nvidia.com/gpu
      replicas: 10
)");
  EXPECT_EQ(c.sharing_strategy(), SharingStrategy::kMps);
  EXPECT_THAT(Shared(c.mps), ElementsAre(Pair("nvidia.com/gpu", 10)));
  EXPECT_TRUE(c.mps.fail_requests_greater_than_one);
  EXPECT_FALSE(c.mps.rename_by_default);
  EXPECT_EQ(&c.sharing(), &c.mps);
  EXPECT_EQ(c.mps_settings.root, "/run/nvidia/mps");

  PluginConfig relaxed = Config(R"(
flags: {mpsRoot: /var/run/mps, mpsControlPath: /opt/nvidia/bin/nvidia-cuda-mps-control,
        nvidiaDriverRoot: /run/nvidia/driver}
sharing: {mps: {renameByDefault: yes, failRequestsGreaterThanOne: false,
                resources: [{name: gpu, replicas: 48}]}}
)");
  EXPECT_FALSE(relaxed.mps.fail_requests_greater_than_one);
  EXPECT_EQ(relaxed.mps.AdvertisedName(relaxed.mps.resources[0]), "nvidia.com/gpu.shared");
  EXPECT_EQ(relaxed.mps_settings.root, "/var/run/mps");
  EXPECT_EQ(relaxed.mps_settings.control_path, "/opt/nvidia/bin/nvidia-cuda-mps-control");
  EXPECT_EQ(relaxed.driver_root, "/run/nvidia/driver");
  // single is allowed: on GPUs without MIG it means whole GPUs (BuildResources refuses MIG ones).
  EXPECT_EQ(Config("flags: {migStrategy: single}\nsharing: {mps: {resources: [{name: gpu, "
                   "replicas: 2}]}}")
                .mig_strategy,
            MigStrategy::kSingle);
}

TEST(KubeConfig, MpsRefusalsAreNvidias) {
  struct Case {
    const char* yaml;
    const char* field;
    const char* problem;
  };
  const Case cases[] = {
      // NVIDIA's validateFlags.
      {"flags: {migStrategy: mixed}\nsharing: {mps: {resources: [{name: gpu, replicas: 2}]}}",
       "flags.migStrategy", "mixed is not supported with MPS"},
      {"flags: {mpsRoot: ''}\nsharing: {mps: {resources: [{name: gpu, replicas: 2}]}}",
       "flags.mpsRoot", "requires flags.mpsRoot"},
      {"flags: {mpsRoot: run/mps}\nsharing: {mps: {resources: [{name: gpu, replicas: 2}]}}",
       "flags.mpsRoot", "absolute"},
      {"flags: {mpsControlPath: nvidia-cuda-mps-control}", "flags.mpsControlPath", "absolute"},
      // ReplicatedResources: replicas >= 2, resources required.
      {"sharing: {mps: {resources: [{name: gpu, replicas: 1}]}}",
       "sharing.mps.resources[0].replicas", ">= 2"},
      {"sharing: {mps: {resources: [{name: gpu}]}}", "sharing.mps.resources[0].replicas",
       "is required"},
      {"sharing: {mps: {}}", "sharing.mps.resources", "no resources"},
      {"sharing: {mps: {failRequestsGreaterThanOne: true}}", "sharing.mps.resources",
       "no resources"},
      // An MPS server has 48 client slots (mps-control-daemon's assertReplicas).
      {"sharing: {mps: {resources: [{name: gpu, replicas: 49}]}}",
       "sharing.mps.resources[0].replicas", "at most 48 clients"},
      {"sharing: {mps: {resources: [{name: gpu, replicas: 2}, {name: nvidia.com/gpu, replicas: 3}]}}",
       "sharing.mps.resources[1].name", "duplicate"},
      {"sharing: {mps: {resources: [{name: gpu, replicas: 2, extra: 1}]}}",
       "sharing.mps.resources[0].extra", "unknown key"},
      {"sharing: {mps: {renameByDefault: maybe, resources: [{name: gpu, replicas: 2}]}}",
       "sharing.mps.renameByDefault", "true or false"},
      // Mutually exclusive (NVIDIA would silently take mps).
      {"sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2}]}, mps: {resources: "
       "[{name: gpu, replicas: 2}]}}",
       "sharing", "mutually exclusive"},
      {"sharing: {timeSlicing: {resources: [{name: gpu, replicas: 1025}]}}",
       "sharing.timeSlicing.resources[0].replicas", "at most 1024"},
  };
  for (const Case& c : cases) {
    InputError e = ErrorOf(c.yaml);
    EXPECT_EQ(e.field(), c.field) << c.yaml;
    EXPECT_THAT(e.problem(), HasSubstr(c.problem)) << c.yaml;
  }
}

TEST(KubeConfig, BadValuesNameTheirKey) {
  struct Case {
    const char* yaml;
    const char* field;
    const char* problem;
  };
  const Case cases[] = {
      {"version: v2", "version", "unknown version"},
      {"flags: {migStrategy: both}", "flags.migStrategy", "unknown value 'both'"},
      {"flags: {plugin: {deviceListStrategy: [envvar, magic]}}",
       "flags.plugin.deviceListStrategy[1]", "unknown value"},
      {"flags: {plugin: {deviceListStrategy: []}}", "flags.plugin.deviceListStrategy",
       "at least one"},
      {"flags: {plugin: {deviceIDStrategy: serial}}", "flags.plugin.deviceIDStrategy",
       "unknown value"},
      {"flags: {plugin: {sharedDevicesAllocationPolicy: spread}}",
       "flags.plugin.sharedDevicesAllocationPolicy", "unknown value"},
      {"flags: {plugin: {passDeviceSpecs: maybe}}", "flags.plugin.passDeviceSpecs",
       "true or false"},
      {"flags: {migstrategy: mixed}", "flags.migstrategy", "unknown key"},
      {"flags: {plugin: {nope: 1}}", "flags.plugin.nope", "unknown key"},
      {"sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2, extra: 1}]}}",
       "sharing.timeSlicing.resources[0].extra", "unknown key"},
      {"health: {ignoredXids: 43}", "health.ignoredXids", "list"},
      {"health: {ignoredXids: [43, x]}", "health.ignoredXids[1]", "integer"},
      {"health: {recoverAfterSeconds: -5}", "health.recoverAfterSeconds", "between"},
      {"pluginDir: relative/dir", "pluginDir", "absolute"},
      {"surprise: 1", "surprise", "unknown key"},
      {"flags: [1, 2]", "flags", "mapping"},
      {"[1, 2]", "", "mapping"},
  };
  for (const Case& c : cases) {
    InputError e = ErrorOf(c.yaml);
    EXPECT_EQ(e.where(), "test.yaml") << c.yaml;
    EXPECT_EQ(e.field(), c.field) << c.yaml;
    EXPECT_THAT(e.problem(), HasSubstr(c.problem)) << c.yaml;
  }
}

TEST(KubeConfig, NvidiaOnlyKeysAreAcceptedAndIgnored) {
  PluginConfig c = Config(R"(
version: v1
flags:
  failOnInitError: false
  gdrcopyEnabled: true
  gdsEnabled: false
  mofedEnabled: true
  useNodeFeatureAPI: true
  deviceDiscoveryStrategy: nvml
  mpsRoot: /run/nvidia/mps-custom
resources:
  gpus:
  - pattern: "*"
    name: gpu
imex:
  channelIDs: [0]
)");
  EXPECT_EQ(c.mig_strategy, MigStrategy::kNone);
  EXPECT_EQ(c.mps_settings.root, "/run/nvidia/mps-custom");  // read, used only with sharing.mps
}

TEST(KubeConfig, MigStrategyNames) {
  EXPECT_STREQ(MigStrategyName(MigStrategy::kNone), "none");
  EXPECT_STREQ(MigStrategyName(MigStrategy::kSingle), "single");
  EXPECT_STREQ(MigStrategyName(MigStrategy::kMixed), "mixed");
  EXPECT_STREQ(SharingStrategyName(SharingStrategy::kNone), "none");
  EXPECT_STREQ(SharingStrategyName(SharingStrategy::kTimeSlicing), "time-slicing");
  EXPECT_STREQ(SharingStrategyName(SharingStrategy::kMps), "mps");
}

}  // namespace
}  // namespace accel::kube
