// ember::nn: modules, functional forms, losses, initialisers and gradient utilities, in
// libtorch's style (ember::nn::Linear(ember::nn::LinearOptions(4, 8)), module->forward(x)).
#pragma once
#include "ember/nn/attention.h"
#include "ember/nn/enums.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/nn/loss/linear_cross_entropy.h"
#include "ember/nn/module.h"
#include "ember/nn/modules/activation.h"
#include "ember/nn/modules/container.h"
#include "ember/nn/modules/linear.h"
#include "ember/nn/modules/loss.h"
#include "ember/nn/modules/normalization.h"
#include "ember/nn/modules/rnn.h"
#include "ember/nn/options.h"
#include "ember/nn/ordered_dict.h"
#include "ember/nn/pimpl.h"
#include "ember/nn/utils.h"
