#include "backends/tpu_sim/tpu_sim.h"
