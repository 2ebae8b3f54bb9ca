// Public header of mltune_ir: the graph IR and its text form.
#pragma once

#include "ir/computation.h"      // IWYU pragma: export
#include "ir/fingerprint.h"      // IWYU pragma: export
#include "ir/hlo_builder.h"      // IWYU pragma: export
#include "ir/hlo_parser.h"       // IWYU pragma: export
#include "ir/hlo_printer.h"      // IWYU pragma: export
#include "ir/instruction.h"      // IWYU pragma: export
#include "ir/literal.h"          // IWYU pragma: export
#include "ir/module.h"           // IWYU pragma: export
#include "ir/shape.h"            // IWYU pragma: export
#include "ir/shape_inference.h"  // IWYU pragma: export
#include "ir/verifier.h"         // IWYU pragma: export
