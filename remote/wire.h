// The measurement wire format of mltune.v1.WorkerService (proto/mltune/v1/worker_service.proto):
// CPU programs, GPU timing runs, timing options and timings to and from their messages, for the
// daemon's remote worker pool and for mltune-worker. Only .cc files include this header (it pulls
// in generated protobuf code).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cpu/codegen.h"
#include "backends/cpu/runner.h"
#include "backends/gpu/gpu_program.h"
#include "mltune/v1/worker_service.pb.h"

namespace mltune::remote {

void ToProto(const backends::cpu::Program& program, v1::CpuProgram* out);
// InvalidArgument naming the shape that does not parse.
absl::StatusOr<backends::cpu::Program> FromProto(const v1::CpuProgram& program);

void ToProto(const backends::cpu::MeasureOptions& options, v1::MeasureOptions* out);
backends::cpu::MeasureOptions FromProto(const v1::MeasureOptions& options);

void ToProto(const backends::cpu::Timing& timing, v1::Timing* out);
backends::cpu::Timing FromProto(const v1::Timing& timing);

// A measurement's outcome: its timing, or its error as an absl status.
void ToProto(const absl::StatusOr<backends::cpu::Timing>& outcome, v1::Measurement* out);
absl::StatusOr<backends::cpu::Timing> FromProto(const v1::Measurement& measurement);

void ToProto(const backends::gpu::GpuPlanBundle& bundle, double timeout_seconds, v1::GpuPlan* out);
backends::gpu::GpuPlanBundle FromProto(const v1::GpuPlan& plan);

void ToProto(const backends::gpu::GpuTiming& timing, v1::GpuTiming* out);
backends::gpu::GpuTiming FromProto(const v1::GpuTiming& timing);

// A GPU measurement's outcome: its timing, or its error as an absl status.
void ToProto(const absl::StatusOr<backends::gpu::GpuTiming>& outcome, v1::Measurement* out);
absl::StatusOr<backends::gpu::GpuTiming> GpuTimingFromProto(const v1::Measurement& measurement);

// This host's CPU for a worker's device descriptor: "MODEL, N cores" from /proc/cpuinfo.
std::string CpuDescriptor();

}  // namespace mltune::remote
