#include "backends/mcm_sim/mcm_sim.h"
