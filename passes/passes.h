// Public header of mltune_passes.
#pragma once

#include "passes/pass.h"      // IWYU pragma: export
#include "passes/pipeline.h"  // IWYU pragma: export
#include "passes/registry.h"  // IWYU pragma: export
