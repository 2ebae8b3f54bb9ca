// mltune-gpu-runner: runs one generated GPU program (PTX modules and a launch sequence over device
// buffers) in its own process, so a faulting or hanging candidate cannot hurt its caller. Reads
// a plan (JSON, gpu_runner.h), loads the CUDA driver at run time, fills the parameters (seeded
// random, or raw bytes from a file), runs once, optionally writes the results' raw bytes, then
// times repeated runs with CUDA events, the L2 flushed before each (Triton's and CUTLASS's
// practice): warm-up, then samples until the spread is small or the time cap is hit. Prints one
// JSON line on stdout; exit 2 on bad usage.
//
//   mltune-gpu-runner PLAN.json
#include <cublasLt.h>
#include <cuda.h>
#include <sys/resource.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/gpu/cudnn_conv.h"
#include "backends/gpu/dl_library.h"
#include "backends/gpu/random_fill.h"
#include "nlohmann/json.hpp"

namespace {

using json = nlohmann::json;
using mltune::backends::gpu::ElementBytes;
using mltune::backends::gpu::FillRandom;

// The driver API, resolved from libcuda.so.1 (names as cuda.h maps them: cuMemAlloc is
// cuMemAlloc_v2).
struct Driver {
  decltype(&cuInit) init;
  decltype(&cuDeviceGet) device_get;
  decltype(&cuDeviceGetName) device_name;
  decltype(&cuDeviceGetAttribute) attribute;
  decltype(&cuDevicePrimaryCtxRetain) ctx_retain;
  decltype(&cuCtxSetCurrent) ctx_set;
  decltype(&cuCtxSynchronize) ctx_sync;
  decltype(&cuModuleLoadDataEx) module_load;
  decltype(&cuModuleGetFunction) function;
  decltype(&cuFuncSetAttribute) func_attribute;
  decltype(&cuMemAlloc) alloc;
  decltype(&cuMemFree) free;
  decltype(&cuMemcpyHtoD) htod;
  decltype(&cuMemcpyDtoH) dtoh;
  decltype(&cuMemsetD8) memset;
  decltype(&cuMemsetD8Async) memset_async;
  decltype(&cuMemcpyDtoDAsync) copy_async;
  decltype(&cuLaunchKernel) launch;
  decltype(&cuEventCreate) event_create;
  decltype(&cuEventRecord) event_record;
  decltype(&cuEventSynchronize) event_sync;
  decltype(&cuEventElapsedTime) elapsed;
  decltype(&cuGetErrorString) error_string;
  // CUDA graphs (optional: without them the timed runs launch one by one).
  decltype(&cuStreamCreate) stream_create;
  decltype(&cuStreamBeginCapture) begin_capture;
  decltype(&cuStreamEndCapture) end_capture;
  decltype(&cuGraphInstantiateWithFlags) graph_instantiate;
  decltype(&cuGraphLaunch) graph_launch;
  decltype(&cuGraphDestroy) graph_destroy;
};

// cuBLASLt, resolved from libcublasLt at run time (only programs with GEMM launches need it).
struct Lt {
  decltype(&cublasLtCreate) create;
  decltype(&cublasLtMatmulDescCreate) desc_create;
  decltype(&cublasLtMatrixLayoutCreate) layout_create;
  decltype(&cublasLtMatrixLayoutSetAttribute) layout_set;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic;
  decltype(&cublasLtMatmul) matmul;
  decltype(&cublasLtGetStatusString) status_string;
};

std::string LoadLt(Lt* lt) {
  mltune::backends::gpu::DlLibrary lib;
  if (!lib.Open({"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"})) {
    return "no cuBLASLt (tried " + lib.tried() + "): " + lib.error();
  }
  auto get = [&](auto* fn, const char* name) { lib.Get(fn, name); };
  get(&lt->create, "cublasLtCreate");
  get(&lt->desc_create, "cublasLtMatmulDescCreate");
  get(&lt->layout_create, "cublasLtMatrixLayoutCreate");
  get(&lt->layout_set, "cublasLtMatrixLayoutSetAttribute");
  get(&lt->pref_create, "cublasLtMatmulPreferenceCreate");
  get(&lt->pref_set, "cublasLtMatmulPreferenceSetAttribute");
  get(&lt->heuristic, "cublasLtMatmulAlgoGetHeuristic");
  get(&lt->matmul, "cublasLtMatmul");
  get(&lt->status_string, "cublasLtGetStatusString");
  return lib.missing().empty() ? "" : "cuBLASLt lacks " + lib.missing();
}

// cuBLASLt's workspace for every GEMM of a program.
constexpr size_t kLtWorkspaceBytes = size_t{32} << 20;

// `s` as a JSON string, quotes included (bytes that are not UTF-8 replaced, not thrown on).
std::string Quoted(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

int Fail(const std::string& message) {
  std::printf("{\"ok\":false,\"error\":%s}\n", Quoted(message).c_str());
  return 1;
}

// Loads every entry point; an error message naming what is missing, or "".
std::string LoadDriver(Driver* d) {
  mltune::backends::gpu::DlLibrary lib;
  if (!lib.Open({"libcuda.so.1"})) return "no CUDA driver: dlopen libcuda.so.1: " + lib.error();
  auto get = [&](auto* fn, const char* name) { lib.Get(fn, name); };
  get(&d->init, "cuInit");
  get(&d->device_get, "cuDeviceGet");
  get(&d->device_name, "cuDeviceGetName");
  get(&d->attribute, "cuDeviceGetAttribute");
  get(&d->ctx_retain, "cuDevicePrimaryCtxRetain");
  get(&d->ctx_set, "cuCtxSetCurrent");
  get(&d->ctx_sync, "cuCtxSynchronize");
  get(&d->module_load, "cuModuleLoadDataEx");
  get(&d->function, "cuModuleGetFunction");
  get(&d->func_attribute, "cuFuncSetAttribute");
  get(&d->alloc, "cuMemAlloc_v2");
  get(&d->free, "cuMemFree_v2");
  get(&d->htod, "cuMemcpyHtoD_v2");
  get(&d->dtoh, "cuMemcpyDtoH_v2");
  get(&d->memset, "cuMemsetD8_v2");
  get(&d->memset_async, "cuMemsetD8Async");
  get(&d->copy_async, "cuMemcpyDtoDAsync_v2");
  get(&d->launch, "cuLaunchKernel");
  get(&d->event_create, "cuEventCreate");
  get(&d->event_record, "cuEventRecord");
  get(&d->event_sync, "cuEventSynchronize");
  get(&d->elapsed, "cuEventElapsedTime");
  get(&d->error_string, "cuGetErrorString");
  // CUDA graphs: optional, the timed runs launch one by one without them.
  lib.GetOptional(&d->stream_create, "cuStreamCreate");
  lib.GetOptional(&d->begin_capture, "cuStreamBeginCapture_v2");
  lib.GetOptional(&d->end_capture, "cuStreamEndCapture");
  lib.GetOptional(&d->graph_instantiate, "cuGraphInstantiateWithFlags");
  lib.GetOptional(&d->graph_launch, "cuGraphLaunch");
  lib.GetOptional(&d->graph_destroy, "cuGraphDestroy");
  return lib.missing().empty() ? "" : "the CUDA driver lacks " + lib.missing();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

namespace {

int Run(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: mltune-gpu-runner PLAN.json\n");
    return 2;
  }
  json plan;
  {
    std::ifstream in(argv[1]);
    if (!in) return Fail(std::string("cannot read ") + argv[1]);
    try {
      in >> plan;
    } catch (const std::exception& e) {
      return Fail(std::string("bad plan: ") + e.what());
    }
  }
  const int64_t cpu_seconds = plan.value("cpu_seconds", 600);
  rlimit cpu{static_cast<rlim_t>(cpu_seconds), static_cast<rlim_t>(cpu_seconds)};
  setrlimit(RLIMIT_CPU, &cpu);

  Driver d{};
  if (std::string missing = LoadDriver(&d); !missing.empty()) return Fail(missing);
  auto check = [&](CUresult r, const std::string& what) -> std::string {
    if (r == CUDA_SUCCESS) return "";
    const char* s = nullptr;
    d.error_string(r, &s);
    return what + ": " + (s != nullptr ? s : "CUDA error " + std::to_string(r));
  };
#define MT_CHECK(call, what) \
  if (std::string e = check((call), (what)); !e.empty()) return Fail(e)
  MT_CHECK(d.init(0), "cuInit");
  CUdevice dev;
  MT_CHECK(d.device_get(&dev, plan.value("device", 0)), "cuDeviceGet");
  char name[256] = {0};
  d.device_name(name, sizeof(name), dev);
  CUcontext ctx;
  MT_CHECK(d.ctx_retain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  MT_CHECK(d.ctx_set(ctx), "cuCtxSetCurrent");
  int l2 = 0;
  d.attribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);

  // Modules (PTX, compiled for the device by the driver) and their functions.
  std::vector<CUmodule> modules;
  for (const json& path : plan.at("modules")) {
    std::ifstream in(path.get<std::string>(), std::ios::binary);
    if (!in) return Fail("cannot read " + path.get<std::string>());
    std::stringstream ptx;
    ptx << in.rdbuf();
    const std::string text = ptx.str();
    char log[8192] = {0};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof(log)))};
    CUmodule m;
    if (std::string e = check(d.module_load(&m, text.c_str(), 2, options, values),
                              "loading " + path.get<std::string>());
        !e.empty()) {
      return Fail(e + ": " + log);
    }
    modules.push_back(m);
  }
  // Buffers: parameters, results, intermediates and workspaces, each zeroed.
  std::vector<CUdeviceptr> buffers;
  std::vector<int64_t> sizes;
  int64_t total = 0;
  const int64_t limit = plan.value("device_memory_mb", int64_t{0}) << 20;
  for (const json& b : plan.at("buffers")) {
    const int64_t bytes = std::max<int64_t>(b.get<int64_t>(), 1);
    total += bytes;
    if (limit > 0 && total > limit) {
      return Fail("the program's buffers exceed the device memory limit of " +
                  std::to_string(limit >> 20) + " MB");
    }
    CUdeviceptr p;
    MT_CHECK(d.alloc(&p, static_cast<size_t>(bytes)), "cuMemAlloc");
    MT_CHECK(d.memset(p, 0, static_cast<size_t>(bytes)), "cuMemsetD8");
    buffers.push_back(p);
    sizes.push_back(bytes);
  }
  // Parameters.
  std::ifstream inputs;
  if (plan.contains("inputs")) {
    inputs.open(plan.at("inputs").get<std::string>(), std::ios::binary);
    if (!inputs) return Fail("cannot read " + plan.at("inputs").get<std::string>());
  }
  uint64_t state = plan.value("seed", uint64_t{0});
  for (const json& p : plan.at("params")) {
    const size_t buffer = p.at("buffer").get<size_t>();
    const std::string type = p.at("type").get<std::string>();
    const int64_t elements = p.at("elements").get<int64_t>();
    std::vector<char> host(static_cast<size_t>(elements * ElementBytes(type)));
    if (inputs.is_open()) {
      inputs.read(host.data(), static_cast<std::streamsize>(host.size()));
      if (inputs.gcount() != static_cast<std::streamsize>(host.size())) {
        return Fail("input file too short");
      }
    } else {
      FillRandom(type, elements, host.data(), &state);
    }
    if (!host.empty()) MT_CHECK(d.htod(buffers[buffer], host.data(), host.size()), "cuMemcpyHtoD");
  }
  // Constant buffers (a while loop's initial state), their bytes one after another in one file.
  if (plan.contains("constants")) {
    std::ifstream in(plan.at("constants_file").get<std::string>(), std::ios::binary);
    for (const json& c : plan.at("constants")) {
      std::vector<char> host(c.at("bytes").get<size_t>());
      in.read(host.data(), static_cast<std::streamsize>(host.size()));
      if (in.gcount() != static_cast<std::streamsize>(host.size())) {
        return Fail("constants file too short");
      }
      if (!host.empty()) {
        MT_CHECK(d.htod(buffers.at(c.at("buffer").get<size_t>()), host.data(), host.size()),
                 "cuMemcpyHtoD");
      }
    }
  }
  // Launches.
  struct Launch {
    enum Kind { kKernel, kGemm, kConv, kCopy, kWhile, kConditional };
    Kind kind = kKernel;
    CUfunction fn;
    unsigned grid[3];
    unsigned block;
    std::vector<CUdeviceptr> args;
    size_t bytes = 0;                           // kCopy
    CUdeviceptr pred = 0;                       // kWhile: the condition's byte
    std::vector<Launch> cond, body;             // kWhile
    bool index = false;                         // kConditional: `pred` holds an s32 branch index
    std::vector<std::vector<Launch>> branches;  // kConditional
    // A cuBLASLt GEMM: row-major C[m,n] = A[m,k] B[k,n] is column-major C^T = B^T A^T, so
    // cuBLASLt's A is our B (n x k, leading dimension n), its B our A (k x m, leading k).
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a_layout, b_layout, c_layout;
    cublasLtMatmulAlgo_t algo;
    int conv = -1;  // kConv: its index in `cudnn`
  };
  std::vector<Launch> launches;
  mltune::backends::gpu::CudnnConvolutions cudnn;
  Lt lt{};
  cublasLtHandle_t lt_handle = nullptr;
  CUdeviceptr lt_workspace = 0;
  auto lt_check = [&](cublasStatus_t s, const std::string& what) -> std::string {
    if (s == CUBLAS_STATUS_SUCCESS) return "";
    return what + ": " + lt.status_string(s);
  };
  // A cuBLASLt GEMM's descriptors and the heuristic's algorithm `algo`.
  auto ParseGemm = [&](const json& l, Launch* g) -> std::string {
    if (lt_handle == nullptr) {
      if (std::string e = LoadLt(&lt); !e.empty()) return e;
      if (std::string e = lt_check(lt.create(&lt_handle), "cublasLtCreate"); !e.empty()) return e;
      if (std::string e =
              check(d.alloc(&lt_workspace, kLtWorkspaceBytes), "cuMemAlloc (cuBLASLt workspace)");
          !e.empty()) {
        return e;
      }
    }
    g->kind = Launch::kGemm;
    const int64_t batch = l.at("batch").get<int64_t>(), m = l.at("m").get<int64_t>();
    const int64_t n = l.at("n").get<int64_t>(), k = l.at("k").get<int64_t>();
    const int64_t algo = l.at("algo").get<int64_t>();
    for (const json& a : l.at("args")) g->args.push_back(buffers.at(a.get<size_t>()));
    if (g->args.size() != 3) return std::string("a gemm launch takes 3 buffers (A, B, C)");
    std::string e = lt_check(lt.desc_create(&g->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                             "cublasLtMatmulDescCreate");
    auto layout = [&](cublasLtMatrixLayout_t* out, int64_t rows, int64_t cols, int64_t stride) {
      if (!e.empty()) return;
      e = lt_check(lt.layout_create(out, CUDA_R_32F, static_cast<uint64_t>(rows),
                                    static_cast<uint64_t>(cols), rows),
                   "cublasLtMatrixLayoutCreate");
      if (!e.empty() || batch == 1) return;
      const int32_t count = static_cast<int32_t>(batch);
      e = lt_check(lt.layout_set(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
                   "batch count");
      if (e.empty()) {
        e = lt_check(lt.layout_set(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                   sizeof(stride)),
                     "batch stride");
      }
    };
    layout(&g->a_layout, n, k, n * k);
    layout(&g->b_layout, k, m, k * m);
    layout(&g->c_layout, n, m, n * m);
    if (!e.empty()) return e;
    cublasLtMatmulPreference_t pref;
    uint64_t ws = kLtWorkspaceBytes;
    e = lt_check(lt.pref_create(&pref), "cublasLtMatmulPreferenceCreate");
    if (e.empty()) {
      e = lt_check(lt.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
                   "workspace preference");
    }
    cublasLtMatmulHeuristicResult_t results[8];
    int returned = 0;
    if (e.empty()) {
      e = lt_check(lt.heuristic(lt_handle, g->desc, g->a_layout, g->b_layout, g->c_layout,
                                g->c_layout, pref, 8, results, &returned),
                   "cublasLtMatmulAlgoGetHeuristic");
    }
    if (!e.empty()) return e;
    if (algo < 1 || algo > returned) {
      return std::string("cuBLASLt proposes " + std::to_string(returned) + " algorithms for this " +
                         std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                         " GEMM; algorithm " + std::to_string(algo) + " was asked for");
    }
    g->algo = results[algo - 1].algo;
    return std::string();
  };
  bool loops = false;  // host-driven while loops or conditionals: no CUDA graph
  std::function<std::string(const json&, std::vector<Launch>&)> parse =
      [&](const json& list, std::vector<Launch>& out) -> std::string {
    for (const json& l : list) {
      Launch launch{};
      const std::string kind = l.value("kind", "");
      if (kind == "copy") {
        launch.kind = Launch::kCopy;
        for (const json& a : l.at("args")) launch.args.push_back(buffers.at(a.get<size_t>()));
        if (launch.args.size() != 2) return std::string("a copy takes 2 buffers");
        launch.bytes = l.at("bytes").get<size_t>();
        out.push_back(std::move(launch));
        continue;
      }
      if (kind == "while") {
        loops = true;
        launch.kind = Launch::kWhile;
        launch.pred = buffers.at(l.at("pred").get<size_t>());
        if (std::string e = parse(l.at("cond"), launch.cond); !e.empty()) return e;
        if (std::string e = parse(l.at("body"), launch.body); !e.empty()) return e;
        out.push_back(std::move(launch));
        continue;
      }
      if (kind == "conditional") {
        loops = true;
        launch.kind = Launch::kConditional;
        launch.pred = buffers.at(l.at("pred").get<size_t>());
        launch.index = l.at("index").get<bool>();
        for (const json& b : l.at("branches")) {
          if (std::string e = parse(b, launch.branches.emplace_back()); !e.empty()) return e;
        }
        out.push_back(std::move(launch));
        continue;
      }
      if (kind == "conv") {
        launch.kind = Launch::kConv;
        for (const json& a : l.at("args")) launch.args.push_back(buffers.at(a.get<size_t>()));
        if (launch.args.size() != 3) return std::string("a conv launch takes 3 buffers (x, w, y)");
        if (std::string e = cudnn.Add(l, &launch.conv); !e.empty()) return e;
        out.push_back(std::move(launch));
        continue;
      }
      if (kind == "gemm") {
        if (std::string e = ParseGemm(l, &launch); !e.empty()) return e;
        out.push_back(std::move(launch));
        continue;
      }
      const std::string entry = l.at("entry").get<std::string>();
      if (std::string e =
              check(d.function(&launch.fn, modules.at(l.at("module").get<size_t>()), entry.c_str()),
                    "cuModuleGetFunction " + entry);
          !e.empty()) {
        return e;
      }
      for (int i = 0; i < 3; ++i) launch.grid[i] = l.at("grid").at(i).get<unsigned>();
      launch.block = l.at("block").get<unsigned>();
      for (const json& a : l.at("args")) launch.args.push_back(buffers.at(a.get<size_t>()));
      out.push_back(std::move(launch));
    }
    return std::string();
  };
  if (std::string e = parse(plan.at("launches"), launches); !e.empty()) return Fail(e);
  CUdeviceptr cudnn_workspace = 0;
  if (cudnn.workspace_bytes() > 0) {
    MT_CHECK(d.alloc(&cudnn_workspace, cudnn.workspace_bytes()), "cuMemAlloc (cuDNN workspace)");
  }
  const float one = 1.f, zero = 0.f;
  CUstream stream = nullptr;
  auto run_gemm = [&](Launch& l) -> std::string {
    return lt_check(lt.matmul(lt_handle, l.desc, &one, reinterpret_cast<void*>(l.args[1]),
                              l.a_layout, reinterpret_cast<void*>(l.args[0]), l.b_layout, &zero,
                              reinterpret_cast<void*>(l.args[2]), l.c_layout,
                              reinterpret_cast<void*>(l.args[2]), l.c_layout, &l.algo,
                              reinterpret_cast<void*>(lt_workspace), kLtWorkspaceBytes, stream),
                    "cublasLtMatmul");
  };
  std::function<std::string(std::vector<Launch>&)> run_list;
  auto run_one = [&](Launch& l) -> std::string {
    switch (l.kind) {
      case Launch::kGemm:
        return run_gemm(l);
      case Launch::kConv:
        return cudnn.Run(l.conv, reinterpret_cast<void*>(l.args[0]),
                         reinterpret_cast<void*>(l.args[1]), reinterpret_cast<void*>(l.args[2]),
                         reinterpret_cast<void*>(cudnn_workspace), stream);
      case Launch::kCopy:
        return check(d.copy_async(l.args[1], l.args[0], l.bytes, stream), "cuMemcpyDtoDAsync");
      case Launch::kWhile:
        // The condition's byte read back each trip: the loop is driven from the host.
        while (true) {
          if (std::string e = run_list(l.cond); !e.empty()) return e;
          if (std::string e = check(d.ctx_sync(), "a while loop's condition"); !e.empty()) {
            return e;
          }
          char go = 0;
          if (std::string e = check(d.dtoh(&go, l.pred, 1), "reading a while loop's condition");
              !e.empty()) {
            return e;
          }
          if (go == 0) return std::string();
          if (std::string e = run_list(l.body); !e.empty()) return e;
        }
      case Launch::kConditional: {
        // The branch index read back: the choice is made on the host.
        if (std::string e = check(d.ctx_sync(), "a conditional's index"); !e.empty()) return e;
        int32_t index = 0;
        char pred = 0;
        if (std::string e =
                check(l.index ? d.dtoh(&index, l.pred, sizeof(index)) : d.dtoh(&pred, l.pred, 1),
                      "reading a conditional's index");
            !e.empty()) {
          return e;
        }
        const int64_t n = static_cast<int64_t>(l.branches.size());
        int64_t b = l.index ? index : (pred != 0 ? 0 : 1);
        if (b < 0 || b >= n) b = n - 1;
        return run_list(l.branches[static_cast<size_t>(b)]);
      }
      case Launch::kKernel:
        break;
    }
    std::vector<void*> params;
    for (CUdeviceptr& a : l.args) params.push_back(&a);
    return check(d.launch(l.fn, l.grid[0], l.grid[1], l.grid[2], l.block, 1, 1, 0, stream,
                          params.data(), nullptr),
                 "cuLaunchKernel");
  };
  run_list = [&](std::vector<Launch>& list) -> std::string {
    for (Launch& l : list) {
      if (std::string e = run_one(l); !e.empty()) return e;
    }
    return std::string();
  };
  auto run_launches = [&]() { return run_list(launches); };
  if (std::string e = run_launches(); !e.empty()) return Fail(e);
  MT_CHECK(d.ctx_sync(), "running the program");
  if (plan.contains("outputs")) {
    std::ofstream out(plan.at("outputs").get<std::string>(), std::ios::binary);
    for (const json& r : plan.at("results")) {
      const size_t buffer = r.at("buffer").get<size_t>();
      std::vector<char> host(static_cast<size_t>(r.at("bytes").get<int64_t>()));
      if (!host.empty())
        MT_CHECK(d.dtoh(host.data(), buffers[buffer], host.size()), "cuMemcpyDtoH");
      out.write(host.data(), static_cast<std::streamsize>(host.size()));
    }
    if (!out) return Fail("cannot write " + plan.at("outputs").get<std::string>());
  }
  const int min_reps = plan.value("min_reps", 5), max_reps = plan.value("max_reps", 200);
  const double max_seconds = plan.value("max_seconds", 0.3);
  const double target_spread = plan.value("spread", 0.02);
  if (max_reps <= 0) {
    std::printf("{\"ok\":true,\"device\":%s,\"samples\":0}\n", Quoted(name).c_str());
    return 0;
  }
  // A buffer twice the L2, written before each sample so no run starts with a warm cache.
  CUdeviceptr flush = 0;
  const size_t flush_bytes = static_cast<size_t>(std::max(l2, 1 << 20)) * 2;
  if (plan.value("flush_l2", true)) MT_CHECK(d.alloc(&flush, flush_bytes), "cuMemAlloc (flush)");
  CUevent start, stop;
  MT_CHECK(d.event_create(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  MT_CHECK(d.event_create(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  // The timed runs replay the launches as one CUDA graph, as XLA's command buffers and
  // torch.compile's "reduce-overhead" do, so that a program of many small launches is not timed
  // by its launch overhead; where the driver cannot capture them, they launch one by one.
  CUgraphExec graph = nullptr;
  std::string graph_note = "off";
  if (loops) graph_note = "off: the program's control flow is driven from the host";
  if (!loops && plan.value("graph", true) && d.stream_create != nullptr &&
      d.begin_capture != nullptr && d.end_capture != nullptr && d.graph_instantiate != nullptr &&
      d.graph_launch != nullptr) {
    CUstream s = nullptr;
    std::string e = check(d.stream_create(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    if (e.empty()) {
      stream = s;
      e = check(d.begin_capture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                "cuStreamBeginCapture");
      if (e.empty()) {
        const std::string launched = run_launches();
        CUgraph g = nullptr;
        e = check(d.end_capture(stream, &g), "cuStreamEndCapture");
        if (e.empty()) e = launched;
        if (e.empty()) e = check(d.graph_instantiate(&graph, g, 0), "cuGraphInstantiate");
        if (g != nullptr && d.graph_destroy != nullptr) d.graph_destroy(g);
      }
    }
    if (!e.empty()) graph = nullptr;
    graph_note = graph != nullptr ? "on" : "failed: " + e;
  }
  auto sample = [&](double* seconds) -> std::string {
    if (flush != 0) {
      if (std::string e = check(d.memset_async(flush, 0, flush_bytes, stream), "flushing L2");
          !e.empty()) {
        return e;
      }
    }
    d.event_record(start, stream);
    if (graph != nullptr) {
      if (std::string e = check(d.graph_launch(graph, stream), "cuGraphLaunch"); !e.empty()) {
        return e;
      }
    } else if (std::string e = run_launches(); !e.empty()) {
      return e;
    }
    d.event_record(stop, stream);
    if (std::string e = check(d.event_sync(stop), "running the program"); !e.empty()) return e;
    float ms = 0;
    d.elapsed(&ms, start, stop);
    *seconds = ms * 1e-3;
    return "";
  };
  double ignored = 0;
  for (int i = 0; i < 3; ++i) {
    if (std::string e = sample(&ignored); !e.empty()) return Fail(e);
  }
  std::vector<double> samples;
  double spent = 0, spread = 1;
  while (true) {
    double t = 0;
    if (std::string e = sample(&t); !e.empty()) return Fail(e);
    samples.push_back(t);
    spent += t;
    const int n = static_cast<int>(samples.size());
    if (n >= max_reps) break;
    if (n < min_reps) continue;
    if (spent >= max_seconds) break;
    if (n >= 10 && n % 5 == 0) {
      std::vector<double> s = samples;
      std::sort(s.begin(), s.end());
      spread = (s[static_cast<size_t>(n * 3 / 4)] - s[static_cast<size_t>(n / 4)]) /
               s[static_cast<size_t>(n / 2)];
      if (spread <= target_spread) break;
    }
  }
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median = Median(sorted);
  const double p25 = sorted[n / 4], p75 = sorted[std::min(n - 1, n * 3 / 4)];
  // Each launch alone (flushed, event-timed): where the program's time goes.
  std::string launch_s;
  if (plan.value("launch_times", false)) {
    launch_s = ",\"launch_s\":[";
    for (size_t i = 0; i < launches.size(); ++i) {
      std::vector<double> times;
      for (int r = 0; r < std::clamp(static_cast<int>(n), 3, 20); ++r) {
        if (flush != 0) d.memset_async(flush, 0, flush_bytes, stream);
        d.event_record(start, stream);
        if (std::string e = run_one(launches[i]); !e.empty()) return Fail(e);
        d.event_record(stop, stream);
        MT_CHECK(d.event_sync(stop), "running a launch");
        float ms = 0;
        d.elapsed(&ms, start, stop);
        times.push_back(ms * 1e-3);
      }
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%s%.9g", i == 0 ? "" : ",", Median(times));
      launch_s += buf;
    }
    launch_s += "]";
  }
  std::printf(
      "{\"ok\":true,\"device\":%s,\"median_s\":%.9g,\"min_s\":%.9g,\"p25_s\":%.9g,"
      "\"p75_s\":%.9g,\"spread\":%.6g,\"samples\":%zu,\"graph\":%s%s}\n",
      Quoted(name).c_str(), median, sorted.front(), p25, p75,
      median > 0 ? (p75 - p25) / median : 0.0, n, Quoted(graph_note).c_str(), launch_s.c_str());
  return 0;
#undef MT_CHECK
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {  // a plan missing a field or of the wrong type
    return Fail(std::string("bad plan: ") + e.what());
  }
}
