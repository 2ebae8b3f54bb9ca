// mltune-gpu-emulator: runs a GPU program's plan (the mltune-gpu-runner protocol, gpu_program.cc)
// on the host CPU, so that the generated kernels are checked against the reference evaluator
// where no GPU is attached (CI, most sessions). The kernels' CUDA sources are compiled as C++ with
// a shim for CUDA's built-ins; a kernel that synchronizes (__syncthreads, warp shuffles) runs a
// host thread per GPU thread of each block, one block at a time, the others run their threads in
// turn; cuBLASLt GEMMs and cuDNN convolutions are plain loops. A timing plan gets the host's wall
// time, which says nothing about a GPU but lets a remote GPU worker be tested without one.
//
//   mltune-gpu-emulator PLAN.json   (with "inputs" and "outputs", or a timing plan; prints
//   {"ok":...} like the runner)
#include <dlfcn.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backends/gpu/random_fill.h"
#include "nlohmann/json.hpp"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// CUDA's built-ins for host C++: thread and block indices per host thread, __shared__ arrays as
// statics (one block runs at a time), barriers for __syncthreads and the warp shuffles.
constexpr char kShim[] = R"SHIM(// mltune-gpu-emulator's host shim.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <atomic>
#include <barrier>
#include <memory>
#include <utility>
struct mt_dim3 { unsigned x, y, z; };
inline thread_local mt_dim3 threadIdx{0, 0, 0}, blockIdx{0, 0, 0};
inline mt_dim3 blockDim{1, 1, 1}, gridDim{1, 1, 1};
inline std::unique_ptr<std::barrier<>> mt_block_barrier;
inline std::unique_ptr<std::barrier<>> mt_warp_barriers[32];
inline unsigned long long mt_shfl_slots[1024];
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
inline bool mt_concurrent = false;  // a host thread per GPU thread, else one after another
inline void mt_barrier(std::barrier<>* b) {
  if (!mt_concurrent || b == nullptr) {
    fputs("mltune-gpu-emulator: a barrier in a kernel run thread by thread\n", stderr);
    _Exit(3);
  }
  b->arrive_and_wait();
}
inline void __syncthreads() { mt_barrier(mt_block_barrier.get()); }
template <typename T> T __shfl_xor_sync(unsigned, T v, int mask, int = 32) {
  static_assert(sizeof(T) <= sizeof(unsigned long long));
  const unsigned t = threadIdx.x;
  memcpy(&mt_shfl_slots[t], &v, sizeof(T));
  mt_barrier(mt_warp_barriers[t / 32].get());
  T r;
  memcpy(&r, &mt_shfl_slots[t ^ static_cast<unsigned>(mask)], sizeof(T));
  mt_barrier(mt_warp_barriers[t / 32].get());
  return r;
}
template <typename T> T atomicAdd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
inline float2 make_float2(float a, float b) { return {a, b}; }
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
template <typename To, typename From> inline To mt_bits(From f) {
  To t;
  memcpy(&t, &f, sizeof(To));
  return t;
}
inline int __float_as_int(float f) { return mt_bits<int>(f); }
inline unsigned __float_as_uint(float f) { return mt_bits<unsigned>(f); }
inline float __int_as_float(int i) { return mt_bits<float>(i); }
inline float __uint_as_float(unsigned i) { return mt_bits<float>(i); }
inline long long __double_as_longlong(double d) { return mt_bits<long long>(d); }
inline double __longlong_as_double(long long i) { return mt_bits<double>(i); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline float rsqrtf(float x) { return 1.f / sqrtf(x); }
extern "C" void mt_emul_thread(unsigned tx, unsigned bx, unsigned by, unsigned bz) {
  threadIdx = {tx, 0, 0};
  blockIdx = {bx, by, bz};
}
extern "C" void mt_emul_launch(unsigned gx, unsigned gy, unsigned gz, unsigned block,
                               int concurrent) {
  mt_concurrent = concurrent != 0;
  gridDim = {gx, gy, gz};
  blockDim = {block, 1, 1};
  mt_block_barrier = std::make_unique<std::barrier<>>(block);
  for (unsigned w = 0; w < 32; ++w) {
    const unsigned lanes = block > w * 32 ? (block - w * 32 < 32 ? block - w * 32 : 32) : 0;
    mt_warp_barriers[w] = lanes > 0 ? std::make_unique<std::barrier<>>(lanes) : nullptr;
  }
}
template <typename... A, size_t... I>
void mt_call(void (*f)(A...), void** a, std::index_sequence<I...>) {
  f(static_cast<A>(a[I])...);
}
template <typename... A> void mt_call(void (*f)(A...), void** a) {
  mt_call(f, a, std::index_sequence_for<A...>{});
}
)SHIM";

int Fail(const std::string& message) {
  // Bytes that are not UTF-8 (a compiler's log) are replaced, not thrown on.
  const json line{{"ok", false}, {"error", message}};
  std::printf("%s\n", line.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
  return 1;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The body of `entry` in `source`: from its name to the next extern "C" (or the end).
std::string EntryText(const std::string& source, const std::string& entry) {
  const size_t at = source.find(" " + entry + "(");
  if (at == std::string::npos) return "";
  const size_t end = source.find("extern \"C\"", at);
  return source.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// Compiles the plan's modules into one shared object (cached by its text) and loads it.
void* BuildAndLoad(const std::vector<std::string>& sources, const json& launches,
                   std::string* error) {
  // Each module in a namespace of its own, its entries C++ functions there (the modules of a while
  // loop's condition and body reuse the entry's names), called through C wrappers.
  std::string text = kShim;
  for (size_t i = 0; i < sources.size(); ++i) {
    std::string source = sources[i];
    for (size_t at = source.find("extern \"C\" "); at != std::string::npos;
         at = source.find("extern \"C\" ", at)) {
      source.erase(at, 11);
    }
    text += "namespace mt_m" + std::to_string(i) + " {\n" + source + "\n}\n";
  }
  std::function<void(const json&)> wrap = [&](const json& list) {
    for (const json& l : list) {
      const std::string kind = l.value("kind", "");
      if (kind == "while") {
        wrap(l.at("cond"));
        wrap(l.at("body"));
      }
      if (kind == "conditional") {
        for (const json& b : l.at("branches")) wrap(b);
      }
      if (!kind.empty()) continue;
      const std::string module = std::to_string(l.at("module").get<size_t>());
      const std::string entry = l.at("entry").get<std::string>();
      const std::string wrapper = "mt_emul_" + module + "_" + entry;
      if (text.find(" " + wrapper + "(") != std::string::npos) continue;
      text += "extern \"C\" void " + wrapper + "(void** a) { mt_call(&mt_m" + module +
              "::" + entry + ", a); }\n";
    }
  };
  wrap(launches);
  const char* cache = std::getenv("MLTUNE_GPU_KERNEL_CACHE");
  const fs::path dir =
      fs::path(cache != nullptr && cache[0] != '\0'
                   ? cache
                   : (fs::temp_directory_path() / "mltune-gpu-emulator").string()) /
      "emulator";
  std::error_code ec;
  fs::create_directories(dir, ec);
  char hash[32];
  std::snprintf(hash, sizeof(hash), "%016zx", std::hash<std::string>{}(text));
  const fs::path so = dir / (std::string("emu-") + hash + ".so");
  if (!fs::exists(so)) {
    const std::string tag = std::to_string(getpid());
    const fs::path src = dir / (std::string("emu-") + hash + "." + tag + ".cc");
    const fs::path tmp = dir / (std::string("emu-") + hash + "." + tag + ".so");
    std::ofstream(src) << text;
    const char* cxx = std::getenv("MLTUNE_CXX");
    const std::string log = (dir / (std::string("emu-") + hash + "." + tag + ".log")).string();
    const std::string command = std::string(cxx != nullptr && cxx[0] != '\0' ? cxx : "g++") +
                                " -std=c++20 -O1 -fPIC -shared -w -pthread -o " + tmp.string() +
                                " " + src.string() + " >" + log + " 2>&1";
    if (std::system(command.c_str()) != 0) {
      *error = "compiling the kernels for the host failed: " + ReadFile(log).substr(0, 2000);
      return nullptr;
    }
    fs::rename(tmp, so, ec);
    fs::remove(src, ec);
    fs::remove(log, ec);
  }
  void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) *error = std::string("dlopen: ") + dlerror();
  return lib;
}

using Buffers = std::vector<std::vector<long double>>;
using ThreadFn = void (*)(unsigned, unsigned, unsigned, unsigned);
using LaunchFn = void (*)(unsigned, unsigned, unsigned, unsigned, int);

// Runs one launch of the plan; an error message, or "".
// A cuDNN convolution launch (cudnn_conv.h): y[n, k, o...] = sum over the group's input features
// c and window positions r of x[n, c, o*stride - pad + r*dilation] w[k, c, r], outside x zero;
// in double, x, w and y stored NCHW or NHWC as the launch says.
std::string Convolve(const json& l, const std::vector<void*>& args) {
  const bool nhwc = l.at("nhwc").get<bool>();
  const int64_t groups = l.at("groups").get<int64_t>();
  const std::vector<int64_t> x = l.at("x"), w = l.at("w"), y = l.at("y");
  const std::vector<int64_t> pad = l.at("pad"), stride = l.at("stride"),
                             dilation = l.at("dilation");
  const size_t ns = x.size() - 2;
  if (x.size() < 3 || w.size() != x.size() || y.size() != x.size() || pad.size() != ns ||
      stride.size() != ns || dilation.size() != ns || groups < 1 || args.size() != 3) {
    return std::string(
        "a conv launch takes x, w, y of one rank, per-dimension pad, stride and "
        "dilation, and 3 buffers");
  }
  // The offset of [N, C, spatial...] element `at` of a tensor of sizes `dims`.
  auto offset = [nhwc](const std::vector<int64_t>& dims, const std::vector<int64_t>& at) {
    int64_t o = nhwc ? at[0] : at[0] * dims[1] + at[1];
    for (size_t d = 2; d < dims.size(); ++d) o = o * dims[d] + at[d];
    if (nhwc) o = o * dims[1] + at[1];
    return o;
  };
  const float* xs = static_cast<const float*>(args[0]);
  const float* ws = static_cast<const float*>(args[1]);
  float* ys = static_cast<float*>(args[2]);
  const int64_t cg = w[1], kg = y[1] / groups;
  int64_t outputs = 1, window = 1;
  for (int64_t v : y) outputs *= v;
  for (size_t d = 0; d < ns; ++d) window *= w[2 + d];
  std::vector<int64_t> yi(y.size()), xi(x.size()), wi(w.size());
  for (int64_t e = 0; e < outputs; ++e) {
    for (size_t d = y.size(), rest = static_cast<size_t>(e); d-- > 0;) {
      yi[d] = static_cast<int64_t>(rest) % y[d];
      rest /= static_cast<size_t>(y[d]);
    }
    double acc = 0;
    const int64_t g = yi[1] / kg;
    xi[0] = yi[0];
    wi[0] = yi[1];
    for (int64_t c = 0; c < cg; ++c) {
      xi[1] = g * cg + c;
      wi[1] = c;
      for (int64_t r = 0; r < window; ++r) {
        bool inside = true;
        for (size_t d = ns, rest = static_cast<size_t>(r); d-- > 0;) {
          wi[2 + d] = static_cast<int64_t>(rest) % w[2 + d];
          rest /= static_cast<size_t>(w[2 + d]);
          xi[2 + d] = yi[2 + d] * stride[d] - pad[d] + wi[2 + d] * dilation[d];
          inside &= xi[2 + d] >= 0 && xi[2 + d] < x[2 + d];
        }
        if (inside) {
          acc += static_cast<double>(xs[offset(x, xi)]) * static_cast<double>(ws[offset(w, wi)]);
        }
      }
    }
    ys[offset(y, yi)] = static_cast<float>(acc);
  }
  return std::string();
}

std::string RunLaunch(const json& l, void* lib, const std::vector<std::string>& sources,
                      Buffers& buffers, ThreadFn set_thread, LaunchFn set_launch,
                      const std::function<std::string(const json&)>& run) {
  const std::string kind = l.value("kind", "");
  if (kind == "copy") {
    void* to = buffers.at(l.at("args").at(1).get<size_t>()).data();
    const void* from = buffers.at(l.at("args").at(0).get<size_t>()).data();
    std::memmove(to, from, l.at("bytes").get<size_t>());
    return std::string();
  }
  if (kind == "while") {
    const char* pred = reinterpret_cast<const char*>(buffers.at(l.at("pred").get<size_t>()).data());
    while (true) {
      if (std::string e = run(l.at("cond")); !e.empty()) return e;
      if (*pred == 0) return std::string();
      if (std::string e = run(l.at("body")); !e.empty()) return e;
    }
  }
  if (kind == "conditional") {
    const void* at = buffers.at(l.at("pred").get<size_t>()).data();
    const int64_t n = static_cast<int64_t>(l.at("branches").size());
    int64_t b = l.at("index").get<bool>() ? *static_cast<const int32_t*>(at)
                                          : (*static_cast<const char*>(at) != 0 ? 0 : 1);
    if (b < 0 || b >= n) b = n - 1;
    return run(l.at("branches").at(static_cast<size_t>(b)));
  }
  std::vector<void*> args;
  for (const json& a : l.at("args")) args.push_back(buffers.at(a.get<size_t>()).data());
  if (kind == "gemm") {
    // Row-major C[m,n] = A[m,k] B[k,n], `batch` times.
    const int64_t batch = l.at("batch"), m = l.at("m"), n = l.at("n"), k = l.at("k");
    const float* a = static_cast<const float*>(args.at(0));
    const float* b = static_cast<const float*>(args.at(1));
    float* c = static_cast<float*>(args.at(2));
    // Accumulated in double, row by row (i, p, j order: B read along its rows).
    std::vector<double> row(static_cast<size_t>(n));
    for (int64_t g = 0; g < batch; ++g) {
      for (int64_t i = 0; i < m; ++i) {
        std::fill(row.begin(), row.end(), 0.0);
        for (int64_t p = 0; p < k; ++p) {
          const double av = a[(g * m + i) * k + p];
          const float* brow = b + (g * k + p) * n;
          for (int64_t j = 0; j < n; ++j) row[static_cast<size_t>(j)] += av * brow[j];
        }
        for (int64_t j = 0; j < n; ++j) {
          c[(g * m + i) * n + j] = static_cast<float>(row[static_cast<size_t>(j)]);
        }
      }
    }
    return std::string();
  }
  if (kind == "conv") return Convolve(l, args);
  const std::string entry = l.at("entry").get<std::string>();
  const std::string module = std::to_string(l.at("module").get<size_t>());
  auto kernel =
      reinterpret_cast<void (*)(void**)>(dlsym(lib, ("mt_emul_" + module + "_" + entry).c_str()));
  if (kernel == nullptr) return std::string("no entry " + entry);
  const std::string body = EntryText(sources.at(l.at("module").get<size_t>()), entry);
  // The prelude's warp folds wrap __shfl_xor_sync as mt_shfl_xor.
  const bool synchronizes =
      body.find("__syncthreads") != std::string::npos || body.find("shfl") != std::string::npos;
  const unsigned gx = l.at("grid").at(0), gy = l.at("grid").at(1), gz = l.at("grid").at(2);
  const unsigned block = l.at("block");
  if (block > 1024) return std::string("a block of more than 1024 threads");
  set_launch(gx, gy, gz, block, synchronizes ? 1 : 0);
  if (!synchronizes) {
    for (unsigned z = 0; z < gz; ++z) {
      for (unsigned y = 0; y < gy; ++y) {
        for (unsigned x = 0; x < gx; ++x) {
          for (unsigned t = 0; t < block; ++t) {
            set_thread(t, x, y, z);
            kernel(args.data());
          }
        }
      }
    }
    return std::string();
  }
  // A host thread per GPU thread of a block, made once per launch: the threads go through the
  // blocks together, all of one block done before the next starts (its __shared__ statics are
  // the next block's).
  std::barrier<> done(block);
  std::vector<std::thread> threads;
  threads.reserve(block);
  for (unsigned t = 0; t < block; ++t) {
    threads.emplace_back([&, t] {
      for (unsigned z = 0; z < gz; ++z) {
        for (unsigned y = 0; y < gy; ++y) {
          for (unsigned x = 0; x < gx; ++x) {
            set_thread(t, x, y, z);
            kernel(args.data());
            done.arrive_and_wait();
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return std::string();
}

int Run(const std::string& plan_path) {
  const json plan = json::parse(ReadFile(plan_path));
  // A timing plan (max_reps) has seeded parameters and no files: the emulator reports the host's
  // wall time of the launches, which lets a GPU worker be tested where there is no GPU; the
  // figure says nothing about a GPU's speed.
  const bool timing = plan.value("max_reps", 0) > 0;
  if (!timing && (!plan.contains("inputs") || !plan.contains("outputs"))) {
    return Fail("the emulator needs the plan's inputs and outputs files");
  }
  if (!plan.contains("sources")) return Fail("the plan has no kernel sources");
  std::vector<std::string> sources;
  for (const json& s : plan.at("sources")) sources.push_back(ReadFile(s.get<std::string>()));
  const json& launches = plan.at("launches");
  std::string error;
  void* lib = BuildAndLoad(sources, launches, &error);
  if (lib == nullptr) return Fail(error);
  auto set_thread = reinterpret_cast<ThreadFn>(dlsym(lib, "mt_emul_thread"));
  auto set_launch = reinterpret_cast<LaunchFn>(dlsym(lib, "mt_emul_launch"));
  if (set_thread == nullptr || set_launch == nullptr)
    return Fail("the shim's entry points are missing");

  // Buffers as 16-byte-aligned zeroed storage (float4 stores).
  Buffers buffers;
  for (const json& b : plan.at("buffers")) {
    buffers.emplace_back((b.get<size_t>() + sizeof(long double) - 1) / sizeof(long double));
  }
  std::ifstream inputs;
  if (!timing) inputs.open(plan.at("inputs").get<std::string>(), std::ios::binary);
  uint64_t state = plan.value("seed", uint64_t{0});
  for (const json& p : plan.at("params")) {
    auto& b = buffers.at(p.at("buffer").get<size_t>());
    const size_t bytes = plan.at("buffers").at(p.at("buffer").get<size_t>()).get<size_t>();
    if (timing) {
      mltune::backends::gpu::FillRandom(p.at("type").get<std::string>(),
                                        p.at("elements").get<int64_t>(),
                                        reinterpret_cast<char*>(b.data()), &state);
      continue;
    }
    inputs.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(bytes));
    if (inputs.gcount() != static_cast<std::streamsize>(bytes)) return Fail("input file too short");
  }
  // Constant buffers, their bytes one after another in one file.
  if (plan.contains("constants")) {
    std::ifstream in(plan.at("constants_file").get<std::string>(), std::ios::binary);
    for (const json& c : plan.at("constants")) {
      auto& b = buffers.at(c.at("buffer").get<size_t>());
      const std::streamsize bytes = c.at("bytes").get<std::streamsize>();
      in.read(reinterpret_cast<char*>(b.data()), bytes);
      if (in.gcount() != bytes) return Fail("constants file too short");
    }
  }
  std::function<std::string(const json&)> run = [&](const json& list) -> std::string {
    for (const json& l : list) {
      if (std::string e = RunLaunch(l, lib, sources, buffers, set_thread, set_launch, run);
          !e.empty()) {
        return e;
      }
    }
    return std::string();
  };
  if (timing) {
    // min_reps runs, fewer when max_seconds runs out first; the median of their wall times.
    std::vector<double> samples;
    const int reps = std::max(1, plan.value("min_reps", 1));
    const double budget = plan.value("max_seconds", 0.3);
    double spent = 0;
    while (static_cast<int>(samples.size()) < reps && (samples.empty() || spent < budget)) {
      const auto start = std::chrono::steady_clock::now();
      if (std::string e = run(launches); !e.empty()) return Fail(e);
      samples.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      spent += samples.back();
    }
    std::sort(samples.begin(), samples.end());
    const double median = samples[samples.size() / 2];
    std::printf(
        "{\"ok\":true,\"device\":\"host emulator\",\"median_s\":%.9g,\"min_s\":%.9g,"
        "\"p25_s\":%.9g,\"p75_s\":%.9g,\"spread\":0,\"samples\":%zu,\"graph\":\"off\"}\n",
        median, samples.front(), samples[samples.size() / 4], samples[samples.size() * 3 / 4],
        samples.size());
    return 0;
  }
  if (std::string e = run(launches); !e.empty()) return Fail(e);
  std::ofstream out(plan.at("outputs").get<std::string>(), std::ios::binary);
  for (const json& r : plan.at("results")) {
    const auto& b = buffers.at(r.at("buffer").get<size_t>());
    out.write(reinterpret_cast<const char*>(b.data()), r.at("bytes").get<std::streamsize>());
  }
  if (!out) return Fail("cannot write the outputs");
  std::printf("{\"ok\":true,\"device\":\"host emulator\",\"samples\":0}\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: mltune-gpu-emulator PLAN.json\n");
    return 2;
  }
  try {
    return Run(argv[1]);
  } catch (const std::exception& e) {  // a plan missing a field or of the wrong type
    return Fail(std::string("bad plan: ") + e.what());
  }
}
