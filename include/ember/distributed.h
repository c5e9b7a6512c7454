// Distributed training on Gloo (torch.distributed): process groups, collectives,
// differentiable collectives and the flight recorder.
#pragma once
#include "ember/distributed/collectives.h"
#include "ember/distributed/flight_recorder.h"
#include "ember/distributed/functional.h"
#include "ember/distributed/process_group.h"
