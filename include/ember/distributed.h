// Distributed training on Gloo (torch.distributed): process groups, collectives,
// differentiable collectives, the flight recorder and fully sharded data parallel (FSDP).
#pragma once
#include "ember/distributed/collectives.h"
#include "ember/distributed/flight_recorder.h"
#include "ember/distributed/fsdp.h"
#include "ember/distributed/fsdp_checkpoint.h"
#include "ember/distributed/functional.h"
#include "ember/distributed/process_group.h"
