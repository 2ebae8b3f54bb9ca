// `mltune collect FILES_OR_DIRS... --target cpu|tpu-sim|SPEC --task tile|fusion --db PATH`: the
// learned cost models' training data (optimizers/cost_model_data/collect.h, docs/cost_models.md).
#include <ostream>
#include <string>

#include "backends/spec/target_spec.h"
#include "client/cli_commands.h"
#include "client/sim_targets.h"

namespace mltune::client {

int RunCollect(const CollectCommand& cmd, std::ostream& out, std::ostream& err) {
  // cpu, or a tpu spec (tpu-sim meaning its default spec, as the daemon resolves it): rows are
  // logged under the spec name, which train-cost-model resolves the same way.
  CollectCommand options = cmd;
  options.target = ResolveAlias(cmd.target);
  if (options.target != "cpu") {
    const backends::TargetSpec* spec = backends::TargetRegistry::Global().Find(options.target);
    if (spec == nullptr || spec->kind != "tpu") {
      err << "error: --target " << cmd.target
          << ": collect supports cpu, tpu-sim and tpu spec names (" << KnownTargets() << ")\n";
      return 1;
    }
  }
  if (absl::Status s = opt::cost_model_data::Collect(options, out, err); !s.ok()) {
    err << "error: " << s.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace mltune::client
