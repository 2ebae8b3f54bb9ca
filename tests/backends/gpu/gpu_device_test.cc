#include <stdlib.h>

#include <string>

#include "absl/status/status.h"
#include "backends/gpu/device.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace mltune::backends::gpu {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Sets an environment variable for one test (the fake driver reads it at call time).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name); old != nullptr) old_ = old, had_ = true;
    setenv(name, value, 1);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(GpuDeviceTest, ProbeDescribesTheGpuOrSaysWhyThereIsNone) {
  absl::StatusOr<DeviceDescriptor> device = ProbeDevice();
  if (!device.ok()) {
    EXPECT_EQ(device.status().code(), absl::StatusCode::kUnavailable) << device.status();
    EXPECT_THAT(std::string(device.status().message()),
                AnyOf(HasSubstr("libcuda"), HasSubstr("device"), HasSubstr("cuInit")));
    EXPECT_EQ(GpuAbsentReason(), device.status().message());
    return;
  }
  EXPECT_EQ(GpuAbsentReason(), "");
  EXPECT_FALSE(device->name.empty());
  EXPECT_GT(device->sm_count, 0);
  EXPECT_GE(device->cc_major, 5);
  EXPECT_GT(device->l2_bytes, 0);
  EXPECT_GT(device->memory_bytes, int64_t{1} << 30);
  EXPECT_GT(device->clock_khz, 0);
  EXPECT_GT(device->driver_version, 0);
  EXPECT_THAT(device->Key(), HasSubstr(device->Arch()));
  EXPECT_THAT(device->Arch(), StartsWith("sm_"));
}

TEST(GpuDeviceTest, MissingDriverIsUnavailableWithDlerror) {
  absl::StatusOr<DeviceDescriptor> device = ProbeDeviceWithDriver("libmltune-no-such-driver.so.1");
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(device.status().message()),
              StartsWith("no CUDA driver: dlopen libmltune-no-such-driver.so.1: "));
  EXPECT_THAT(std::string(device.status().message()), HasSubstr("cannot open shared object file"));
}

TEST(GpuDeviceTest, LibraryWithoutTheDriverApiIsUnavailable) {
  absl::StatusOr<DeviceDescriptor> device = ProbeDeviceWithDriver("libm.so.6");
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(device.status().message()), HasSubstr("libm.so.6 lacks cuInit"));
}

#ifdef MLTUNE_FAKE_CUDA_DRIVER
// The build tree's fake driver, or $MLTUNE_FAKE_CUDA_DRIVER (scripts/gpu_check's bundle).
std::string FakeDriver() {
  const char* env = getenv("MLTUNE_FAKE_CUDA_DRIVER");
  return env != nullptr && env[0] != '\0' ? env : MLTUNE_FAKE_CUDA_DRIVER;
}

TEST(GpuDeviceTest, FakeDriverFillsEveryField) {
  absl::StatusOr<DeviceDescriptor> device = ProbeDeviceWithDriver(FakeDriver(), 1);
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ(device->name, "Fake H100 #1");
  EXPECT_EQ(device->cc_major, 9);
  EXPECT_EQ(device->cc_minor, 0);
  EXPECT_EQ(device->sm_count, 132);
  EXPECT_EQ(device->clock_khz, 1980000);
  EXPECT_EQ(device->memory_clock_khz, 2619000);
  EXPECT_EQ(device->memory_bus_bits, 5120);
  EXPECT_EQ(device->l2_bytes, 50 * 1024 * 1024);
  EXPECT_EQ(device->memory_bytes, int64_t{85'000'000'000});
  EXPECT_EQ(device->driver_version, 13000);
  EXPECT_EQ(device->Arch(), "sm_90");
  // 2 transfers x 2.619 GHz x 640 bytes: H100 SXM's 3.35 TB/s.
  EXPECT_NEAR(device->MemoryBandwidthGBs(), 3352.32, 1e-6);
  EXPECT_EQ(device->Key(),
            "name=Fake H100 #1;arch=sm_90;sms=132;clock_khz=1980000;mem_clock_khz=2619000;"
            "bus_bits=5120;l2_bytes=52428800;mem_bytes=85000000000;driver=13000");
}

TEST(GpuDeviceTest, FakeDriverOrdinalOutOfRange) {
  for (int ordinal : {2, 3, -1}) {
    absl::StatusOr<DeviceDescriptor> device = ProbeDeviceWithDriver(FakeDriver(), ordinal);
    ASSERT_FALSE(device.ok());
    EXPECT_EQ(device.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(device.status().message(),
              "device ordinal " + std::to_string(ordinal) + " out of range (2 devices)");
  }
}

TEST(GpuDeviceTest, FakeDriverWithoutDevices) {
  ScopedEnv env("MLTUNE_FAKE_CUDA_DEVICES", "0");
  absl::StatusOr<DeviceDescriptor> device = ProbeDeviceWithDriver(FakeDriver());
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(device.status().message(), "no CUDA device (cuDeviceGetCount = 0)");
}

TEST(GpuDeviceTest, FakeDriverInitFailureNamesTheError) {
  ScopedEnv env("MLTUNE_FAKE_CUDA_INIT_ERROR", "100");  // CUDA_ERROR_NO_DEVICE
  absl::StatusOr<DeviceDescriptor> device = ProbeDeviceWithDriver(FakeDriver());
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(device.status().message(),
            "cuInit failed: fake: no CUDA-capable device is detected (CUresult 100)");
}
#endif  // MLTUNE_FAKE_CUDA_DRIVER

TEST(GpuDeviceTest, KeyNamesEveryFieldOnOneLine) {
  DeviceDescriptor d;
  d.name = "Two\nLines";
  d.cc_major = 8;
  d.cc_minor = 6;
  const std::string key = d.Key();
  EXPECT_THAT(key, Not(HasSubstr("\n")));
  EXPECT_THAT(key, HasSubstr("arch=sm_86"));
  // Each field changes the key.
  auto changed = [&](auto mutate) {
    DeviceDescriptor e = d;
    mutate(e);
    return e.Key();
  };
  EXPECT_NE(changed([](DeviceDescriptor& e) { e.name = "Other"; }), key);
  EXPECT_NE(changed([](DeviceDescriptor& e) { e.cc_minor = 0; }), key);
  EXPECT_NE(changed([](DeviceDescriptor& e) { e.sm_count = 1; }), key);
  EXPECT_NE(changed([](DeviceDescriptor& e) { e.clock_khz = 1; }), key);
  EXPECT_NE(changed([](DeviceDescriptor& e) { e.memory_clock_khz = 1; }), key);
  EXPECT_NE(changed([](DeviceDescriptor& e) { e.memory_bus_bits = 1; }), key);
  EXPECT_NE(changed([](DeviceDescriptor& e) { e.l2_bytes = 1; }), key);
  EXPECT_NE(changed([](DeviceDescriptor& e) { e.memory_bytes = 1; }), key);
  EXPECT_NE(changed([](DeviceDescriptor& e) { e.driver_version = 1; }), key);
}

TEST(GpuDeviceTest, FromKeyReadsBackEveryField) {
  DeviceDescriptor d;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.clock_khz = 1980000;
  d.memory_clock_khz = 3201000;
  d.memory_bus_bits = 6144;
  d.l2_bytes = int64_t{60} << 20;
  d.memory_bytes = int64_t{141} << 30;
  d.driver_version = 13000;
  absl::StatusOr<DeviceDescriptor> back = DeviceDescriptor::FromKey(d.Key());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->Key(), d.Key());
  EXPECT_EQ(back->Arch(), "sm_90");
  EXPECT_EQ(back->memory_bytes, d.memory_bytes);
  // What a worker could send wrong is named.
  EXPECT_THAT(std::string(DeviceDescriptor::FromKey("H100").status().message()),
              HasSubstr("not name=value"));
  EXPECT_THAT(std::string(DeviceDescriptor::FromKey("name=x;arch=sm_90").status().message()),
              HasSubstr("no field 'sms'"));
  std::string bad = d.Key();
  bad.replace(bad.find("sms=132"), 7, "sms=lots");
  EXPECT_THAT(std::string(DeviceDescriptor::FromKey(bad).status().message()),
              HasSubstr("sms='lots' is not an integer"));
}

TEST(GpuDeviceTest, DescriptorForArch) {
  struct Case {
    const char* arch;
    int major, minor;
  } cases[] = {
      {"sm_80", 8, 0}, {"sm_86", 8, 6}, {"sm_90", 9, 0}, {"sm_100", 10, 0}, {"sm_120", 12, 0}};
  for (const Case& c : cases) {
    absl::StatusOr<DeviceDescriptor> d = DescriptorForArch(c.arch);
    ASSERT_TRUE(d.ok()) << c.arch << ": " << d.status();
    EXPECT_EQ(d->cc_major, c.major) << c.arch;
    EXPECT_EQ(d->cc_minor, c.minor) << c.arch;
    EXPECT_EQ(d->Arch(), c.arch);
    EXPECT_EQ(d->name, "(none: compile only)");
    EXPECT_EQ(d->sm_count, 0);
    EXPECT_EQ(d->memory_bytes, 0);
    EXPECT_EQ(d->MemoryBandwidthGBs(), 0);
  }
}

TEST(GpuDeviceTest, DescriptorForInvalidArch) {
  for (const char* arch : {"gfx90a", "sm_x", "sm_", "sm_9", "sm_0090", "sm_1000", "sm_09",
                           "compute_90", "SM_90", "sm_9x", ""}) {
    absl::StatusOr<DeviceDescriptor> d = DescriptorForArch(arch);
    ASSERT_FALSE(d.ok()) << arch;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << arch;
    EXPECT_THAT(std::string(d.status().message()), HasSubstr("expected sm_<major><minor>")) << arch;
    EXPECT_THAT(std::string(d.status().message()), HasSubstr(std::string("'") + arch + "'"));
  }
}

}  // namespace
}  // namespace mltune::backends::gpu
