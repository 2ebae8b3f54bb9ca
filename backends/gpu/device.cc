#include "backends/gpu/device.h"

#include <dlfcn.h>
#include <openssl/evp.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace mltune::backends::gpu {
namespace {

// The few driver API types and values used here, declared by hand so that this file needs no
// CUDA header and the library no link-time driver dependency (cuda.h names in the comments).
using CuResult = int;  // CUresult; CUDA_SUCCESS = 0
using CuDevice = int;  // CUdevice (typedef int CUdevice_v1)
constexpr CuResult kCudaSuccess = 0;
constexpr int kAttrClockRate = 13;               // CU_DEVICE_ATTRIBUTE_CLOCK_RATE (kHz)
constexpr int kAttrMultiprocessorCount = 16;     // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttrMemoryClockRate = 36;         // CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE (kHz)
constexpr int kAttrGlobalMemoryBusWidth = 37;    // CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH
constexpr int kAttrL2CacheSize = 38;             // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE (bytes)
constexpr int kAttrComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeCapabilityMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

using CuInitFn = CuResult (*)(unsigned int flags);                          // cuInit
using CuDeviceGetCountFn = CuResult (*)(int* count);                        // cuDeviceGetCount
using CuDeviceGetFn = CuResult (*)(CuDevice* device, int ordinal);          // cuDeviceGet
using CuDeviceGetNameFn = CuResult (*)(char* name, int len, CuDevice dev);  // cuDeviceGetName
using CuDeviceGetAttributeFn = CuResult (*)(int* value, int attrib,
                                            CuDevice dev);                  // cuDeviceGetAttribute
using CuDeviceTotalMemFn = CuResult (*)(size_t* bytes, CuDevice dev);       // cuDeviceTotalMem_v2
using CuDriverGetVersionFn = CuResult (*)(int* version);                    // cuDriverGetVersion
using CuGetErrorStringFn = CuResult (*)(CuResult error, const char** str);  // cuGetErrorString

struct Driver {
  CuInitFn init;
  CuDeviceGetCountFn device_get_count;
  CuDeviceGetFn device_get;
  CuDeviceGetNameFn device_get_name;
  CuDeviceGetAttributeFn device_get_attribute;
  CuDeviceTotalMemFn device_total_mem;
  CuDriverGetVersionFn driver_get_version;
  CuGetErrorStringFn get_error_string;

  std::string ErrorString(CuResult result) const {
    const char* text = nullptr;
    if (get_error_string(result, &text) == kCudaSuccess && text != nullptr) {
      return absl::StrCat(text, " (CUresult ", result, ")");
    }
    return absl::StrCat("CUresult ", result);
  }
};

// The handle is never closed: a driver is not meant to be unloaded, and dlopen of a loaded
// library only counts a reference.
absl::StatusOr<Driver> LoadDriver(const std::string& library) {
  dlerror();
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    return absl::UnavailableError(absl::StrCat("no CUDA driver: dlopen ", library, ": ",
                                               error != nullptr ? error : "unknown error"));
  }
  Driver driver;
  absl::Status missing;
  auto resolve = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, symbol));
    if (fn == nullptr && missing.ok()) {
      missing = absl::UnavailableError(
          absl::StrCat("no usable CUDA driver: ", library, " lacks ", symbol));
    }
  };
  resolve(driver.init, "cuInit");
  resolve(driver.device_get_count, "cuDeviceGetCount");
  resolve(driver.device_get, "cuDeviceGet");
  resolve(driver.device_get_name, "cuDeviceGetName");
  resolve(driver.device_get_attribute, "cuDeviceGetAttribute");
  resolve(driver.device_total_mem, "cuDeviceTotalMem_v2");
  resolve(driver.driver_get_version, "cuDriverGetVersion");
  resolve(driver.get_error_string, "cuGetErrorString");
  if (!missing.ok()) return missing;
  return driver;
}

}  // namespace

std::string DeviceDescriptor::Arch() const { return absl::StrCat("sm_", cc_major, cc_minor); }

double DeviceDescriptor::MemoryBandwidthGBs() const {
  return 2.0 * memory_clock_khz * 1e3 * (memory_bus_bits / 8.0) / 1e9;
}

std::string DeviceDescriptor::Key() const {
  const std::string clean_name = absl::StrReplaceAll(name, {{"\n", " "}, {"\r", " "}, {";", ","}});
  return absl::StrFormat(
      "name=%s;arch=%s;sms=%d;clock_khz=%d;mem_clock_khz=%d;bus_bits=%d;l2_bytes=%d;"
      "mem_bytes=%d;driver=%d",
      clean_name, Arch(), sm_count, clock_khz, memory_clock_khz, memory_bus_bits, l2_bytes,
      memory_bytes, driver_version);
}

absl::StatusOr<DeviceDescriptor> ProbeDeviceWithDriver(const std::string& library, int ordinal) {
  absl::StatusOr<Driver> driver = LoadDriver(library);
  if (!driver.ok()) return driver.status();
  if (CuResult r = driver->init(0); r != kCudaSuccess) {
    return absl::UnavailableError(absl::StrCat("cuInit failed: ", driver->ErrorString(r)));
  }
  int count = 0;
  if (CuResult r = driver->device_get_count(&count); r != kCudaSuccess) {
    return absl::UnavailableError(
        absl::StrCat("cuDeviceGetCount failed: ", driver->ErrorString(r)));
  }
  if (count == 0) return absl::UnavailableError("no CUDA device (cuDeviceGetCount = 0)");
  if (ordinal < 0 || ordinal >= count) {
    return absl::UnavailableError(absl::StrCat("device ordinal ", ordinal, " out of range (", count,
                                               count == 1 ? " device)" : " devices)"));
  }
  CuDevice device = 0;
  if (CuResult r = driver->device_get(&device, ordinal); r != kCudaSuccess) {
    return absl::UnavailableError(
        absl::StrCat("cuDeviceGet(", ordinal, ") failed: ", driver->ErrorString(r)));
  }
  DeviceDescriptor d;
  char name[256] = {};
  if (CuResult r = driver->device_get_name(name, sizeof(name) - 1, device); r != kCudaSuccess) {
    return absl::UnavailableError(absl::StrCat("cuDeviceGetName failed: ", driver->ErrorString(r)));
  }
  d.name = name;
  struct {
    int attribute;
    const char* what;
    int* field;
  } attributes[] = {
      {kAttrComputeCapabilityMajor, "COMPUTE_CAPABILITY_MAJOR", &d.cc_major},
      {kAttrComputeCapabilityMinor, "COMPUTE_CAPABILITY_MINOR", &d.cc_minor},
      {kAttrMultiprocessorCount, "MULTIPROCESSOR_COUNT", &d.sm_count},
      {kAttrClockRate, "CLOCK_RATE", &d.clock_khz},
      {kAttrMemoryClockRate, "MEMORY_CLOCK_RATE", &d.memory_clock_khz},
      {kAttrGlobalMemoryBusWidth, "GLOBAL_MEMORY_BUS_WIDTH", &d.memory_bus_bits},
  };
  for (const auto& a : attributes) {
    if (CuResult r = driver->device_get_attribute(a.field, a.attribute, device);
        r != kCudaSuccess) {
      return absl::UnavailableError(
          absl::StrCat("cuDeviceGetAttribute(", a.what, ") failed: ", driver->ErrorString(r)));
    }
  }
  int l2 = 0;
  if (CuResult r = driver->device_get_attribute(&l2, kAttrL2CacheSize, device); r != kCudaSuccess) {
    return absl::UnavailableError(
        absl::StrCat("cuDeviceGetAttribute(L2_CACHE_SIZE) failed: ", driver->ErrorString(r)));
  }
  d.l2_bytes = l2;
  size_t memory = 0;
  if (CuResult r = driver->device_total_mem(&memory, device); r != kCudaSuccess) {
    return absl::UnavailableError(
        absl::StrCat("cuDeviceTotalMem failed: ", driver->ErrorString(r)));
  }
  d.memory_bytes = static_cast<int64_t>(memory);
  if (CuResult r = driver->driver_get_version(&d.driver_version); r != kCudaSuccess) {
    return absl::UnavailableError(
        absl::StrCat("cuDriverGetVersion failed: ", driver->ErrorString(r)));
  }
  return d;
}

absl::StatusOr<DeviceDescriptor> ProbeDevice(int ordinal) {
  return ProbeDeviceWithDriver("libcuda.so.1", ordinal);
}

std::string GpuAbsentReason() {
  absl::StatusOr<DeviceDescriptor> device = ProbeDevice();
  return device.ok() ? "" : std::string(device.status().message());
}

absl::StatusOr<DeviceDescriptor> DescriptorForArch(std::string_view arch) {
  const std::string given(arch);
  auto invalid = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("GPU architecture '", given,
                     "': expected sm_<major><minor> such as sm_80, sm_90 or sm_100"));
  };
  absl::string_view digits(arch.data(), arch.size());
  if (!absl::ConsumePrefix(&digits, "sm_")) return invalid();
  if (digits.size() < 2 || digits.size() > 3 || digits[0] == '0') return invalid();
  for (char c : digits) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return invalid();
  }
  DeviceDescriptor d;
  d.name = "(none: compile only)";
  if (!absl::SimpleAtoi(digits.substr(0, digits.size() - 1), &d.cc_major)) return invalid();
  d.cc_minor = digits.back() - '0';
  return d;
}

const absl::StatusOr<DeviceDescriptor>& AttachedDevice() {
  static const absl::StatusOr<DeviceDescriptor>* device =
      new absl::StatusOr<DeviceDescriptor>(ProbeDevice(0));
  return *device;
}

namespace {

std::mutex remote_mu;
RemoteDeviceProvider* remote_provider = nullptr;  // leaked on purpose, like AttachedDevice's

}  // namespace

void SetRemoteDeviceProvider(RemoteDeviceProvider provider) {
  std::lock_guard<std::mutex> lock(remote_mu);
  delete remote_provider;
  remote_provider = provider ? new RemoteDeviceProvider(std::move(provider)) : nullptr;
}

absl::StatusOr<DeviceDescriptor> MeasuringDevice() {
  const absl::StatusOr<DeviceDescriptor>& attached = AttachedDevice();
  if (attached.ok()) return *attached;
  std::lock_guard<std::mutex> lock(remote_mu);
  if (remote_provider != nullptr) {
    if (std::optional<DeviceDescriptor> remote = (*remote_provider)(); remote.has_value()) {
      return *remote;
    }
  }
  return absl::UnavailableError(
      absl::StrCat(attached.status().message(), "; and no remote GPU worker is connected"));
}

std::string GpuCacheTarget(const DeviceDescriptor& device) {
  const std::string key = device.Key();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(key.data(), key.size(), digest, &len, EVP_sha256(), nullptr);
  std::string hex = "gpu@";
  for (unsigned int i = 0; i < 8 && i < len; ++i) absl::StrAppendFormat(&hex, "%02x", digest[i]);
  return hex;
}

std::string GpuCacheTarget() {
  const absl::StatusOr<DeviceDescriptor> device = MeasuringDevice();
  return device.ok() ? GpuCacheTarget(*device) : "gpu@none";
}

absl::StatusOr<DeviceDescriptor> DeviceDescriptor::FromKey(std::string_view key) {
  std::map<std::string, std::string> fields;
  for (absl::string_view part : absl::StrSplit(absl::string_view(key.data(), key.size()), ';')) {
    const size_t eq = part.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("device key: '", std::string(part), "' is not name=value"));
    }
    fields[std::string(part.substr(0, eq))] = std::string(part.substr(eq + 1));
  }
  DeviceDescriptor d;
  auto text = [&](const char* name) -> absl::StatusOr<std::string> {
    auto it = fields.find(name);
    if (it == fields.end()) {
      return absl::InvalidArgumentError(absl::StrCat("device key: no field '", name, "'"));
    }
    return it->second;
  };
  absl::StatusOr<std::string> name = text("name");
  if (!name.ok()) return name.status();
  d.name = *name;
  absl::StatusOr<std::string> arch = text("arch");
  if (!arch.ok()) return arch.status();
  absl::StatusOr<DeviceDescriptor> cc = DescriptorForArch(*arch);
  if (!cc.ok()) return cc.status();
  d.cc_major = cc->cc_major;
  d.cc_minor = cc->cc_minor;
  const std::pair<const char*, int*> ints[] = {{"sms", &d.sm_count},
                                               {"clock_khz", &d.clock_khz},
                                               {"mem_clock_khz", &d.memory_clock_khz},
                                               {"bus_bits", &d.memory_bus_bits},
                                               {"driver", &d.driver_version}};
  for (const auto& [field, out] : ints) {
    absl::StatusOr<std::string> v = text(field);
    if (!v.ok()) return v.status();
    if (!absl::SimpleAtoi(*v, out)) {
      return absl::InvalidArgumentError(
          absl::StrCat("device key: ", field, "='", *v, "' is not an integer"));
    }
  }
  const std::pair<const char*, int64_t*> longs[] = {{"l2_bytes", &d.l2_bytes},
                                                    {"mem_bytes", &d.memory_bytes}};
  for (const auto& [field, out] : longs) {
    absl::StatusOr<std::string> v = text(field);
    if (!v.ok()) return v.status();
    if (!absl::SimpleAtoi(*v, out)) {
      return absl::InvalidArgumentError(
          absl::StrCat("device key: ", field, "='", *v, "' is not an integer"));
    }
  }
  return d;
}

}  // namespace mltune::backends::gpu
