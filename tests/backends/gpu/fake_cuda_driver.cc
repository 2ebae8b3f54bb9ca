// A stand-in for libcuda.so.1, built on the toolkit's cuda.h: gpu_device_test loads it through
// ProbeDeviceWithDriver to test the probe's success and error paths (and that device.cc's
// hand-declared attribute numbers are cuda.h's) on machines without a GPU. Two "Fake H100"s by
// default; MLTUNE_FAKE_CUDA_DEVICES sets the count and MLTUNE_FAKE_CUDA_INIT_ERROR makes cuInit
// fail with that CUresult.
#include <cuda.h>

#include <cstdio>
#include <cstdlib>

namespace {

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' ? std::atoi(value) : fallback;
}

int DeviceCount() { return EnvInt("MLTUNE_FAKE_CUDA_DEVICES", 2); }

}  // namespace

extern "C" {

CUresult CUDAAPI cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return static_cast<CUresult>(EnvInt("MLTUNE_FAKE_CUDA_INIT_ERROR", CUDA_SUCCESS));
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** str) {
  switch (error) {
    case CUDA_SUCCESS:
      *str = "fake: no error";
      return CUDA_SUCCESS;
    case CUDA_ERROR_NO_DEVICE:
      *str = "fake: no CUDA-capable device is detected";
      return CUDA_SUCCESS;
    default:
      *str = nullptr;
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  *count = DeviceCount();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal < 0 || ordinal >= DeviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice device) {
  std::snprintf(name, len, "Fake H100 #%d", device);
  return CUDA_SUCCESS;
}

// Distinct values per attribute, so a wrong attribute number shows as a wrong field.
CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = 9;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = 0;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = 132;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      *value = 1980000;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
      *value = 2619000;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
      *value = 5120;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      *value = 50 * 1024 * 1024;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// cuda.h maps cuDeviceTotalMem to this symbol.
CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice) {
  *bytes = size_t{85} * 1000 * 1000 * 1000;  // over 2^32: the size must not be truncated
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int* version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

}  // extern "C"
