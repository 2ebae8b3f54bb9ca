#include "backends/cluster_sim/cluster_sim.h"
