// The umbrella header: everything a user of ember needs.
#pragma once
#include "ember/autograd.h"
#include "ember/dtype.h"
#include "ember/error.h"
#include "ember/functions.h"
#include "ember/memory.h"
#include "ember/parallel.h"
#include "ember/random.h"
#include "ember/scalar.h"
#include "ember/tensor.h"
#include "ember/tensor_options.h"
#include "ember/nn.h"
#include "ember/optim.h"
