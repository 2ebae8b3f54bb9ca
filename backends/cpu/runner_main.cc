// mltune-cpu-runner: loads one generated shared object and runs it, in its own process so a bad
// candidate cannot hurt its caller. Limits its own address space and CPU time first, fills the
// inputs (seeded random, or raw bytes from a file), runs once, optionally writes the results'
// raw bytes, then times repeated runs. Prints one JSON line on stdout; exit 2 on bad usage.
//
//   mltune-cpu-runner --lib X.so --param f32:4,8 ... --result f32:4 ... [--seed S | --inputs F]
//                     [--outputs F] [--reps MIN,MAX] [--max-seconds S] [--spread X]
//                     [--mem-mb M] [--cpu-seconds C] [--kernel-times 1] [--constants F]
//
// --constants F: the program's constants segment, mapped read-only and bound before the first
// call (a program that names constants by offset exports mltune_bind_constants).
// --kernel-times 1: after the timing, runs the module's profiled entry (each kernel call timed;
// modules only) a few times more and adds "kernel_s", each kernel's median seconds, to the line.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct Buffer {
  std::string type;
  int64_t elements = 1;
  int64_t bytes = 0;
  void* data = nullptr;
};

int ElementBytes(const std::string& t) {
  if (t == "pred" || t == "s8" || t == "u8") return 1;
  if (t == "s16" || t == "u16" || t == "bf16" || t == "f16") return 2;
  if (t == "f32" || t == "s32" || t == "u32") return 4;
  if (t == "f64" || t == "s64" || t == "u64") return 8;
  return 0;
}

bool ParseBuffer(const std::string& spec, Buffer* b) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) return false;
  b->type = spec.substr(0, colon);
  const int eb = ElementBytes(b->type);
  if (eb == 0) return false;
  std::string dims = spec.substr(colon + 1);
  size_t pos = 0;
  while (pos < dims.size()) {
    size_t next = dims.find(',', pos);
    if (next == std::string::npos) next = dims.size();
    b->elements *= std::strtoll(dims.substr(pos, next - pos).c_str(), nullptr, 10);
    pos = next + 1;
  }
  b->bytes = b->elements * eb;
  return true;
}

void* AllocZeroed(int64_t bytes) {
  const size_t size = static_cast<size_t>(std::max<int64_t>(64, (bytes + 63) / 64 * 64));
  void* p = std::aligned_alloc(64, size);
  if (p != nullptr) std::memset(p, 0, size);  // touch every page before timing
  return p;
}

uint64_t SplitMix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void FillRandom(Buffer* b, uint64_t* state) {
  for (int64_t i = 0; i < b->elements; ++i) {
    const uint64_t r = SplitMix(state);
    const double u = static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
    if (b->type == "f32") {
      static_cast<float*>(b->data)[i] = static_cast<float>(2 * u - 1);
    } else if (b->type == "f64") {
      static_cast<double*>(b->data)[i] = 2 * u - 1;
    } else if (b->type == "bf16") {  // the float's upper half
      static_cast<uint16_t*>(b->data)[i] =
          static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(2 * u - 1)) >> 16);
    } else if (b->type == "f16") {
      static_cast<uint16_t*>(b->data)[i] =
          std::bit_cast<uint16_t>(static_cast<_Float16>(2 * u - 1));
    } else if (b->type == "pred") {
      static_cast<uint8_t*>(b->data)[i] = r & 1;
    } else {
      const uint64_t v = r % 8;  // small non-negative integers: valid as indices and shifts
      std::memcpy(static_cast<char*>(b->data) + i * ElementBytes(b->type), &v,
                  static_cast<size_t>(ElementBytes(b->type)));
    }
  }
}

int Fail(const std::string& message) {
  std::string escaped;
  for (char c : message) {
    if (c == '"' || c == '\\') escaped.push_back('\\');
    escaped.push_back(c == '\n' ? ' ' : c);
  }
  std::printf("{\"ok\":false,\"error\":\"%s\"}\n", escaped.c_str());
  return 1;
}

// ",\"kernel_s\":[...]": each kernel's median seconds over runs of the profiled entry (at least 3,
// at most `reps` and 50, stopping after `max_seconds` once 3 are done), less the timer's own
// median cost (0 at least); "" when the library has no profiled entry (a kernel compiled alone).
std::string KernelSeconds(void* handle, const std::vector<void*>& args,
                          const std::vector<void*>& outs, char* scratch, int reps,
                          double max_seconds) {
  using Profiled = void (*)(void* const*, void* const*, char*, int64_t*);
  using Count = int32_t (*)();
  auto profiled = reinterpret_cast<Profiled>(dlsym(handle, "mltune_entry_profiled"));
  auto count = reinterpret_cast<Count>(dlsym(handle, "mltune_kernel_count"));
  if (profiled == nullptr || count == nullptr || count() <= 0) return "";
  // One more slot than kernels: an empty timed region, the timer's cost.
  const size_t kernels = static_cast<size_t>(count());
  std::vector<std::vector<int64_t>> runs;  // per run, per kernel and the timer, nanoseconds
  double spent = 0;
  for (int r = 0; r < std::clamp(reps, 3, 50); ++r) {
    std::vector<int64_t> ns(kernels + 1, 0);
    const auto t0 = std::chrono::steady_clock::now();
    profiled(args.data(), outs.data(), scratch, ns.data());
    spent += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    runs.push_back(std::move(ns));
    if (r >= 2 && spent >= max_seconds) break;
  }
  auto median = [&](size_t slot) {
    std::vector<int64_t> column;
    for (const std::vector<int64_t>& run : runs) column.push_back(run[slot]);
    std::nth_element(column.begin(), column.begin() + static_cast<long>(column.size() / 2),
                     column.end());
    return column[column.size() / 2];
  };
  const int64_t timer = median(kernels);
  std::string out = ",\"kernel_s\":[";
  for (size_t k = 0; k < kernels; ++k) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%s%.9g", k == 0 ? "" : ",",
                  1e-9 * static_cast<double>(std::max<int64_t>(0, median(k) - timer)));
    out += buf;
  }
  return out + "]";
}

// Maps the constants segment `path` and binds it to the library; "" on success, else why not.
std::string BindConstants(void* handle, const std::string& path) {
  using Bytes = int64_t (*)();
  using Bind = void (*)(const void*);
  auto bytes = reinterpret_cast<Bytes>(dlsym(handle, "mltune_constants_bytes"));
  auto bind = reinterpret_cast<Bind>(dlsym(handle, "mltune_bind_constants"));
  if (bind == nullptr || bytes == nullptr) {
    return path.empty() ? "" : "--constants given, but the library has no constants segment";
  }
  if (path.empty()) return "the library needs its constants segment (--constants)";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "cannot open " + path;
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size != bytes()) {
    close(fd);
    return path + " is not the library's constants segment (size differs)";
  }
  // MAP_POPULATE reads it in now, so page faults do not land in the first timed calls.
  void* p =
      mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return "cannot map " + path;
  bind(p);
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  std::string lib, inputs, outputs, constants;
  std::vector<Buffer> params, results;
  uint64_t seed = 0;
  int min_reps = 5, max_reps = 500;
  double max_seconds = 0.3, target_spread = 0.02;
  int64_t mem_mb = 8192, cpu_seconds = 600;
  bool kernel_times = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (v == nullptr) {
      std::fprintf(stderr, "mltune-cpu-runner: %s needs a value\n", a.c_str());
      return 2;
    }
    ++i;
    Buffer b;
    if (a == "--lib") {
      lib = v;
    } else if (a == "--param" || a == "--result") {
      if (!ParseBuffer(v, &b)) {
        std::fprintf(stderr, "mltune-cpu-runner: bad buffer '%s' (TYPE:d0,d1,...)\n", v);
        return 2;
      }
      (a == "--param" ? params : results).push_back(b);
    } else if (a == "--seed") {
      seed = std::strtoull(v, nullptr, 10);
    } else if (a == "--inputs") {
      inputs = v;
    } else if (a == "--outputs") {
      outputs = v;
    } else if (a == "--reps") {
      std::sscanf(v, "%d,%d", &min_reps, &max_reps);
    } else if (a == "--max-seconds") {
      max_seconds = std::strtod(v, nullptr);
    } else if (a == "--spread") {
      target_spread = std::strtod(v, nullptr);
    } else if (a == "--mem-mb") {
      mem_mb = std::strtoll(v, nullptr, 10);
    } else if (a == "--cpu-seconds") {
      cpu_seconds = std::strtoll(v, nullptr, 10);
    } else if (a == "--kernel-times") {
      kernel_times = std::strtol(v, nullptr, 10) != 0;
    } else if (a == "--constants") {
      constants = v;
    } else {
      std::fprintf(stderr, "mltune-cpu-runner: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (lib.empty()) {
    std::fprintf(stderr, "mltune-cpu-runner: --lib is required\n");
    return 2;
  }
  rlimit mem{static_cast<rlim_t>(mem_mb) << 20, static_cast<rlim_t>(mem_mb) << 20};
  setrlimit(RLIMIT_AS, &mem);
  rlimit cpu{static_cast<rlim_t>(cpu_seconds), static_cast<rlim_t>(cpu_seconds)};
  setrlimit(RLIMIT_CPU, &cpu);

  void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return Fail(std::string("dlopen: ") + dlerror());
  using Entry = void (*)(void* const*, void* const*, char*);
  using Scratch = int64_t (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, "mltune_entry"));
  auto scratch_bytes = reinterpret_cast<Scratch>(dlsym(handle, "mltune_scratch_bytes"));
  if (entry == nullptr || scratch_bytes == nullptr) return Fail("missing mltune_entry symbols");
  if (std::string error = BindConstants(handle, constants); !error.empty()) return Fail(error);

  std::vector<void*> args, outs;
  uint64_t state = seed;
  std::ifstream in;
  if (!inputs.empty()) {
    in.open(inputs, std::ios::binary);
    if (!in) return Fail("cannot read " + inputs);
  }
  for (Buffer& b : params) {
    b.data = AllocZeroed(b.bytes);
    if (b.data == nullptr) return Fail("out of memory allocating inputs");
    if (!inputs.empty()) {
      in.read(static_cast<char*>(b.data), b.bytes);
      if (in.gcount() != b.bytes) return Fail("input file too short");
    } else {
      FillRandom(&b, &state);
    }
    args.push_back(b.data);
  }
  for (Buffer& b : results) {
    b.data = AllocZeroed(b.bytes);
    if (b.data == nullptr) return Fail("out of memory allocating results");
    outs.push_back(b.data);
  }
  char* scratch = static_cast<char*>(AllocZeroed(scratch_bytes()));
  if (scratch == nullptr) return Fail("out of memory allocating scratch");

  using Clock = std::chrono::steady_clock;
  auto run = [&] {
    const auto t0 = Clock::now();
    entry(args.data(), outs.data(), scratch);
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  const double first = run();
  if (!outputs.empty()) {
    std::ofstream out(outputs, std::ios::binary);
    for (const Buffer& b : results) out.write(static_cast<const char*>(b.data), b.bytes);
    if (!out) return Fail("cannot write " + outputs);
  }
  if (max_reps <= 0) {
    std::printf("{\"ok\":true,\"first_s\":%.9g,\"samples\":0}\n", first);
    return 0;
  }
  // Warm-up, then batch calls so one sample lasts at least 100 us (timer resolution).
  double warm = first;
  for (int i = 0; i < 3 || warm < 0.01; ++i) {
    warm += run();
    if (i > 1000) break;
  }
  const double single = std::max(1e-9, std::min(first, run()));
  const int64_t calls = std::clamp<int64_t>(static_cast<int64_t>(1e-4 / single) + 1, 1, 10000);
  std::vector<double> samples;
  double total = 0, spread = 1;
  while (true) {
    const auto t0 = Clock::now();
    for (int64_t c = 0; c < calls; ++c) entry(args.data(), outs.data(), scratch);
    const double t = std::chrono::duration<double>(Clock::now() - t0).count() / calls;
    samples.push_back(t);
    total += t * calls;
    const int n = static_cast<int>(samples.size());
    if (n >= max_reps) break;
    if (n < min_reps) continue;
    if (total >= max_seconds) break;
    if (n >= 10 && n % 5 == 0) {
      std::vector<double> s = samples;
      std::sort(s.begin(), s.end());
      spread = (s[static_cast<size_t>(n * 3 / 4)] - s[static_cast<size_t>(n / 4)]) /
               s[static_cast<size_t>(n / 2)];
      if (spread <= target_spread) break;
    }
  }
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  const double median = n % 2 == 1 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  const double p25 = samples[n / 4], p75 = samples[std::min(n - 1, n * 3 / 4)];
  const std::string kernel_s = kernel_times ? KernelSeconds(handle, args, outs, scratch,
                                                            static_cast<int>(n), max_seconds / 2)
                                            : "";
  std::printf(
      "{\"ok\":true,\"first_s\":%.9g,\"median_s\":%.9g,\"min_s\":%.9g,\"p25_s\":%.9g,"
      "\"p75_s\":%.9g,\"spread\":%.6g,\"samples\":%zu,\"calls_per_sample\":%lld%s}\n",
      first, median, samples.front(), p25, p75, median > 0 ? (p75 - p25) / median : 0.0, n,
      static_cast<long long>(calls), kernel_s.c_str());
  return 0;
}
