// Internal: the MCM simulator's SRAM rule as a constraint (optimizers/mcm only).
#pragma once

#include <memory>

#include "costmodels/analytical/op_graph.h"
#include "optimizers/constraints/constraints.h"

namespace mltune::opt::mcm::internal {

// A chip's SRAM holds its ops' weights (each array once), every tensor it receives (once per
// producer, at its largest edge into the chip) and its largest result, as McmSimulator counts
// them; kept exact as ops are fixed, so a partition it accepts fits.
std::unique_ptr<constraints::Constraint> MakeSramConstraint(const costmodels::OpGraph& graph,
                                                            double sram_bytes);

}  // namespace mltune::opt::mcm::internal
