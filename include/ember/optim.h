// ember::optim: optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, LBFGS) and learning-rate
// schedulers, in libtorch's style (ember::optim::AdamW opt(model->parameters(),
// ember::optim::AdamWOptions(1e-3))).
#pragma once
#include "ember/optim/adagrad.h"
#include "ember/optim/adam.h"
#include "ember/optim/lbfgs.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/one_cycle_lr.h"
#include "ember/optim/optimizer.h"
#include "ember/optim/reduce_on_plateau_scheduler.h"
#include "ember/optim/rmsprop.h"
#include "ember/optim/sgd.h"
