#include "remote/wire.h"

#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "ir/hlo_parser.h"

namespace mltune::remote {

namespace cpu = backends::cpu;

void ToProto(const cpu::Program& program, v1::CpuProgram* out) {
  out->set_source(program.source);
  for (const ir::Shape& s : program.params) out->add_params(s.ToString());
  for (const ir::Shape& s : program.results) out->add_results(s.ToString());
  out->set_scratch_bytes(program.scratch_bytes);
  out->set_uses_onednn(program.uses_onednn);
  if (program.constants != nullptr) out->set_constants(*program.constants);
}

absl::StatusOr<cpu::Program> FromProto(const v1::CpuProgram& program) {
  cpu::Program out;
  out.source = program.source();
  out.scratch_bytes = program.scratch_bytes();
  out.uses_onednn = program.uses_onednn();
  if (!program.constants().empty()) {
    out.constants = std::make_shared<const std::string>(program.constants());
  }
  for (const auto& [texts, shapes, what] :
       {std::tuple(&program.params(), &out.params, "parameter"),
        std::tuple(&program.results(), &out.results, "result")}) {
    for (int i = 0; i < texts->size(); ++i) {
      absl::StatusOr<ir::Shape> shape = ir::ParseShape((*texts)[i]);
      if (!shape.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, " ", i, " shape '", (*texts)[i], "': ", shape.status().message()));
      }
      shapes->push_back(*std::move(shape));
    }
  }
  if (out.scratch_bytes < 0) return absl::InvalidArgumentError("scratch_bytes is negative");
  return out;
}

void ToProto(const cpu::MeasureOptions& options, v1::MeasureOptions* out) {
  out->set_threads(options.threads);
  out->set_min_reps(options.min_reps);
  out->set_max_reps(options.max_reps);
  out->set_max_seconds(options.max_seconds);
  out->set_target_spread(options.target_spread);
  out->set_memory_limit_mb(options.memory_limit_mb);
  out->set_timeout_seconds(options.timeout_seconds);
  out->set_kernel_times(options.kernel_times);
}

cpu::MeasureOptions FromProto(const v1::MeasureOptions& options) {
  cpu::MeasureOptions out;
  out.threads = options.threads();
  out.min_reps = options.min_reps();
  out.max_reps = options.max_reps();
  out.max_seconds = options.max_seconds();
  out.target_spread = options.target_spread();
  out.memory_limit_mb = options.memory_limit_mb();
  out.timeout_seconds = options.timeout_seconds();
  out.kernel_times = options.kernel_times();
  return out;
}

void ToProto(const cpu::Timing& timing, v1::Timing* out) {
  out->set_median_s(timing.median_s);
  out->set_min_s(timing.min_s);
  out->set_p25_s(timing.p25_s);
  out->set_p75_s(timing.p75_s);
  out->set_spread(timing.spread);
  out->set_samples(timing.samples);
  out->set_calls_per_sample(timing.calls_per_sample);
  for (double k : timing.kernel_s) out->add_kernel_s(k);
}

cpu::Timing FromProto(const v1::Timing& timing) {
  cpu::Timing out;
  out.median_s = timing.median_s();
  out.min_s = timing.min_s();
  out.p25_s = timing.p25_s();
  out.p75_s = timing.p75_s();
  out.spread = timing.spread();
  out.samples = timing.samples();
  out.calls_per_sample = timing.calls_per_sample();
  out.kernel_s.assign(timing.kernel_s().begin(), timing.kernel_s().end());
  return out;
}

namespace {

// A failed measurement's status in its message, and back.
void SetError(const absl::Status& status, v1::Measurement* out) {
  out->set_error(std::string(status.message()));
  out->set_error_code(static_cast<int>(status.code()));
}

absl::Status ErrorOf(const v1::Measurement& measurement) {
  if (measurement.error().empty()) return absl::OkStatus();
  absl::StatusCode code = static_cast<absl::StatusCode>(measurement.error_code());
  if (code == absl::StatusCode::kOk) code = absl::StatusCode::kUnknown;
  return absl::Status(code, measurement.error());
}

}  // namespace

void ToProto(const absl::StatusOr<cpu::Timing>& outcome, v1::Measurement* out) {
  if (outcome.ok()) {
    ToProto(*outcome, out->mutable_timing());
  } else {
    SetError(outcome.status(), out);
  }
}

absl::StatusOr<cpu::Timing> FromProto(const v1::Measurement& measurement) {
  if (absl::Status s = ErrorOf(measurement); !s.ok()) return s;
  return FromProto(measurement.timing());
}

namespace gpu = backends::gpu;

void ToProto(const gpu::GpuPlanBundle& bundle, double timeout_seconds, v1::GpuPlan* out) {
  out->set_plan_json(bundle.plan_json);
  for (const auto& [name, bytes] : bundle.files) (*out->mutable_files())[name] = bytes;
  out->set_timeout_seconds(timeout_seconds);
}

gpu::GpuPlanBundle FromProto(const v1::GpuPlan& plan) {
  gpu::GpuPlanBundle bundle;
  bundle.plan_json = plan.plan_json();
  for (const auto& [name, bytes] : plan.files()) bundle.files[name] = bytes;
  return bundle;
}

void ToProto(const gpu::GpuTiming& timing, v1::GpuTiming* out) {
  out->set_median_s(timing.median_s);
  out->set_min_s(timing.min_s);
  out->set_p25_s(timing.p25_s);
  out->set_p75_s(timing.p75_s);
  out->set_spread(timing.spread);
  out->set_samples(timing.samples);
  out->set_device(timing.device);
  out->set_graph(timing.graph);
  for (double s : timing.launch_s) out->add_launch_s(s);
}

gpu::GpuTiming FromProto(const v1::GpuTiming& timing) {
  gpu::GpuTiming out;
  out.median_s = timing.median_s();
  out.min_s = timing.min_s();
  out.p25_s = timing.p25_s();
  out.p75_s = timing.p75_s();
  out.spread = timing.spread();
  out.samples = timing.samples();
  out.device = timing.device();
  out.graph = timing.graph();
  out.launch_s.assign(timing.launch_s().begin(), timing.launch_s().end());
  return out;
}

void ToProto(const absl::StatusOr<gpu::GpuTiming>& outcome, v1::Measurement* out) {
  if (outcome.ok()) {
    ToProto(*outcome, out->mutable_gpu_timing());
  } else {
    SetError(outcome.status(), out);
  }
}

absl::StatusOr<gpu::GpuTiming> GpuTimingFromProto(const v1::Measurement& measurement) {
  if (absl::Status s = ErrorOf(measurement); !s.ok()) return s;
  return FromProto(measurement.gpu_timing());
}

std::string CpuDescriptor() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(in, line)) {
    if (!absl::StartsWith(line, "model name")) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      model = std::string(absl::StripAsciiWhitespace(absl::string_view(line).substr(colon + 1)));
    }
    break;
  }
  return absl::StrCat(model, ", ", std::thread::hardware_concurrency(), " cores");
}

}  // namespace mltune::remote
