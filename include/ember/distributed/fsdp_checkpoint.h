// State dicts and checkpoints of fully_shard modules (torch.distributed.checkpoint with
// FSDP2's full and sharded state dicts). Every rank calls each of these functions, with
// modules sharded the same way; parameters must be sharded (not unshard()ed) when they run.
//
// A sharded checkpoint is a directory:
//   rank_<r>.safetensors  rank r's rows of every sharded tensor ("model.<state_dict key>",
//                         "optim.state.<parameter name>/<state name>"); rank 0's file also
//                         holds the replicated ones (buffers, "optim.param_groups.<g>.params")
//   index.json            {"format": "ember.fsdp.sharded.v1", "world_size", "step",
//                         "metadata": {...}, "scalars": {optimizer numbers by key},
//                         "tensors": {key: {"shape": [...], "sharded": bool}}}
// A sharded tensor of R rows saved by W ranks has rank r's rows at [r c, r c + its count) with
// c = ceil(R / W), as fully_shard splits them, so loading at any world size reads each rank's
// new rows from the files that hold them. index.json is written last, after every rank file:
// a directory with an index is complete.
#pragma once
#include <string>

#include "ember/io/safetensors.h"
#include "ember/nn/module.h"
#include "ember/optim/optimizer.h"

namespace ember::distributed::fsdp {

// module.state_dict() with every sharded parameter gathered to its full shape, on every rank
// (PyTorch's get_model_state_dict with full_state_dict=True).
OrderedDict<std::string, Tensor> get_full_state_dict(const nn::Module& module);

// Copies full tensors (from get_full_state_dict, or a one-process module's state_dict) into
// the module, each rank taking its rows. Strict: throws ember::Error naming every missing or
// unexpected key and every shape or dtype mismatch; nothing is copied then.
void set_full_state_dict(nn::Module& module, const OrderedDict<std::string, Tensor>& state_dict);

// Writes the sharded checkpoint of module and optimizer (AdamW, SGD, ...: its per-parameter
// tensors are sharded like their parameters) into `directory`, created if needed. Use a fresh
// directory per checkpoint.
void save_sharded_checkpoint(const std::string& directory, const nn::Module& module,
                             const optim::Optimizer& optimizer, int64_t step, const io::Metadata& metadata = {});

struct LoadedCheckpoint {
  int64_t step = 0;
  io::Metadata metadata;
};

// The step and metadata of a sharded checkpoint (reads index.json only).
LoadedCheckpoint read_sharded_checkpoint_info(const std::string& directory);

// Restores module and optimizer from a sharded checkpoint saved at any world size. Throws
// ember::Error naming the directory and the problem (no index, a missing key, a shape
// mismatch), leaving module and optimizer unchanged.
LoadedCheckpoint load_sharded_checkpoint(const std::string& directory, nn::Module& module,
                                         optim::Optimizer& optimizer);

}  // namespace ember::distributed::fsdp
