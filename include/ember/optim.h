// ember::optim: optimizers (SGD, Adam, AdamW) and learning-rate schedulers, in libtorch's
// style (ember::optim::AdamW opt(model->parameters(), ember::optim::AdamWOptions(1e-3))).
#pragma once
#include "ember/optim/adam.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizer.h"
#include "ember/optim/sgd.h"
