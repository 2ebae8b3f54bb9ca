// The GPU a worker measures on, as the CUDA driver describes it: its Key() goes into every GPU
// cache key and measurement row, so numbers from different cards, clocks or drivers never mix.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace mltune::backends::gpu {

struct DeviceDescriptor {
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int cc_major = 0;  // compute capability, 9.0 for Hopper
  int cc_minor = 0;
  int sm_count = 0;
  int clock_khz = 0;         // SM clock, kHz
  int memory_clock_khz = 0;  // peak memory clock, kHz
  int memory_bus_bits = 0;
  int64_t l2_bytes = 0;
  int64_t memory_bytes = 0;
  int driver_version = 0;  // cuDriverGetVersion: 1000 * major + 10 * minor (13000 for 13.0)

  // The real architecture NVRTC and ptxas target: "sm_90" for compute capability 9.0.
  std::string Arch() const;
  // Peak DRAM bandwidth: two transfers per memory clock (DDR) over the bus, in GB/s.
  double MemoryBandwidthGBs() const;
  // Every field on one stable line ("name=...;arch=sm_90;sms=132;..."), never with a newline.
  std::string Key() const;
  // The descriptor a Key() describes (a remote worker's device): InvalidArgument naming the field
  // that is missing or malformed.
  static absl::StatusOr<DeviceDescriptor> FromKey(std::string_view key);
};

// Describes device `ordinal` through the CUDA driver, loaded at run time (dlopen libcuda.so.1), so
// that the binaries build and run on machines without a driver. Unavailable, with the reason,
// where there is no driver, the driver fails to initialize, or there is no such device.
absl::StatusOr<DeviceDescriptor> ProbeDevice(int ordinal = 0);

// ProbeDevice through the driver library at `library` (a path or a soname): the tests load a fake
// driver through it.
absl::StatusOr<DeviceDescriptor> ProbeDeviceWithDriver(const std::string& library, int ordinal = 0);

// "" when device 0 probes fine, else why there is no usable GPU (the Unavailable message).
std::string GpuAbsentReason();

// Device 0 as this process first probed it (the driver is initialized once; a daemon's device
// does not change under it).
const absl::StatusOr<DeviceDescriptor>& AttachedDevice();

// A device on another machine that GPU work is measured on when this one has none: a daemon's
// remote GPU workers (daemon/remote) install a provider; nullopt from it, or no provider, means
// none. Process-wide, like AttachedDevice.
using RemoteDeviceProvider = std::function<std::optional<DeviceDescriptor>()>;
void SetRemoteDeviceProvider(RemoteDeviceProvider provider);

// The device GPU work is measured on: the attached one, else a remote worker's, else the reason
// there is none (AttachedDevice's).
absl::StatusOr<DeviceDescriptor> MeasuringDevice();

// The target name GPU results are cached under: "gpu@" and 16 hex digits of the SHA-256 of the
// measuring device's Key(), or "gpu@none" without one; results from other cards never answer.
std::string GpuCacheTarget();
std::string GpuCacheTarget(const DeviceDescriptor& device);

// A descriptor for compile-only work where no device is present: the compute capability of
// `arch` ("sm_80", "sm_90", "sm_100"), named "(none: compile only)", every other field zero.
// InvalidArgument for anything else.
absl::StatusOr<DeviceDescriptor> DescriptorForArch(std::string_view arch);

}  // namespace mltune::backends::gpu
