// Training checkpoints in one safetensors file: everything needed to resume a run so that
// it continues bit for bit as if it had never stopped.
//
// Layout: the module's state_dict under "model.<key>", the optimizer's tensors under
// "optim.<key>" (see OptimizerStateDict); the `__metadata__` holds, as JSON strings,
//   "ember.step"       the step count, an integer
//   "ember.optimizer"  the optimizer's scalars (hyperparameters, per-parameter steps)
//   "ember.generator"  the default generator's state {"seed": ..., "offset": ...}
// plus the caller's extra metadata under any key not starting with "ember.".
#pragma once
#include <cstdint>
#include <string>

#include "ember/io/safetensors.h"
#include "ember/nn/module.h"
#include "ember/optim/optimizer.h"

namespace ember::io {

// Writes the checkpoint atomically (see save_safetensors).
void save_checkpoint(const std::string& path, const nn::Module& module, const optim::Optimizer& optimizer,
                     int64_t step, const Metadata& extra_metadata = {});

// Restores the module (strictly: every key, shape and dtype must match), the optimizer and
// the default generator; returns the step. Throws ember::Error naming the file and the
// problem, leaving module, optimizer and generator unchanged.
int64_t load_checkpoint(const std::string& path, nn::Module& module, optim::Optimizer& optimizer);

// Restores only the module from a checkpoint (for inference); returns the step.
int64_t load_checkpoint_weights(const std::string& path, nn::Module& module);

// The caller's extra metadata of a checkpoint (reads the header only).
Metadata checkpoint_extra_metadata(const std::string& path);

}  // namespace ember::io
