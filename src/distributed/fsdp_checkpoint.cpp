// Full state dicts (gathered) and sharded safetensors checkpoints of fully_shard modules.
#include "ember/distributed/fsdp_checkpoint.h"

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "distributed/fsdp_group.h"
#include "ember/autograd.h"
#include "ember/functions.h"
#include "ember/atomic_file.h"

namespace ember::distributed::fsdp {
namespace {

constexpr const char* kFormat = "ember.fsdp.sharded.v1";

// Where this rank's piece of a tensor sits in the full one. For a tensor no fully_shard
// took, the piece is the whole tensor.
struct Placement {
  std::vector<int64_t> full_sizes;
  int64_t first_row = 0;
  int64_t rows = 0;
  bool sharded = false;
};

// A fully_shard parameter of `module` (or a tensor of its shard's shape, as an optimizer
// state) in its sharded state; throws naming `op` while the parameter is gathered.
std::optional<ParameterShard> sharded_parameter(const Tensor& param, const std::string& name, const char* op) {
  auto shard = find_shard(param);
  if (shard)
    EMBER_CHECK(shard->group->is_sharded(), op, "parameter '", name,
                "' is gathered (unshard() or between forward and backward); reshard() first");
  return shard;
}

// A parameter of no rows is saved whole by rank 0, like a replicated tensor.
Placement placement_of(const std::optional<ParameterShard>& shard, const Tensor& tensor) {
  if (!shard || shard->parameter->rows() == 0) return {tensor.sizes(), 0, 0, false};
  const ShardedParameter& p = *shard->parameter;
  const int rank = shard->group->process_group()->rank();
  return {p.full_sizes, p.first_row(rank), p.local_rows, true};
}

// The full tensor of a sharded parameter: one all-gather of the padded shards.
Tensor gather(const ParameterShard& shard) {
  const ShardedParameter& p = *shard.parameter;
  const auto& group = shard.group->process_group();
  NoGradGuard no_grad;
  Tensor gathered = empty({group->size() * p.shard_numel()}, p.dtype);
  all_gather_into_tensor(gathered, p.padded_shard.reshape({-1}), {.group = group});
  std::vector<int64_t> padded_sizes = p.full_sizes;
  padded_sizes[0] = group->size() * p.rows_per_rank;
  return gathered.view(padded_sizes).narrow(0, 0, p.rows()).contiguous();
}

std::string describe(const std::vector<int64_t>& sizes) {
  std::ostringstream out;
  out << IntArrayRef(sizes);
  return out.str();
}

// The optimizer's parameters by name (their first name in module.named_parameters()).
std::vector<std::string> optimizer_parameter_names(const nn::Module& module, const optim::Optimizer& optimizer,
                                                   const char* op) {
  std::map<const TensorImpl*, std::string> names;
  for (const auto& item : module.named_parameters()) names.emplace(item.value().unsafeGetTensorImpl(), item.key());
  std::vector<std::string> result;
  for (const Tensor& param : optimizer.parameters()) {
    auto it = names.find(param.unsafeGetTensorImpl());
    EMBER_CHECK(it != names.end(), op, "optimizer parameter ", result.size(), " (shape ", param.sizes(),
                ") is not a parameter of the module");
    result.push_back(it->second);
  }
  return result;
}

// "state.<i>.<name>" -> (i, name); nullopt for other keys.
std::optional<std::pair<size_t, std::string>> split_state_key(const std::string& key) {
  if (key.rfind("state.", 0) != 0) return std::nullopt;
  const size_t dot = key.find('.', 6);
  if (dot == std::string::npos) return std::nullopt;
  return std::pair<size_t, std::string>{std::stoul(key.substr(6, dot - 6)), key.substr(dot + 1)};
}

std::string optimizer_state_key(const std::string& parameter, const std::string& name) {
  return "optim.state." + parameter + "/" + name;
}

// Rows [first, first + count) of a tensor of a checkpoint, read from the rank files that hold
// them (memory-mapped, each file opened once).
class CheckpointReader {
 public:
  CheckpointReader(std::string directory, const nlohmann::json& index, const char* op)
      : directory_(std::move(directory)), op_(op) {
    world_size_ = index.at("world_size").get<int>();
    EMBER_CHECK(world_size_ > 0, op_, "checkpoint '", directory_, "': world_size ", world_size_, " is not positive");
    for (const auto& [key, entry] : index.at("tensors").items())
      entries_[key] = {entry.at("shape").get<std::vector<int64_t>>(), entry.at("sharded").get<bool>()};
  }

  bool contains(const std::string& key) const { return entries_.count(key) > 0; }
  const std::vector<int64_t>& shape(const std::string& key) const { return entry(key).shape; }
  std::vector<std::string> keys_with_prefix(const std::string& prefix) const {
    std::vector<std::string> keys;
    for (const auto& [key, entry] : entries_)
      if (key.rfind(prefix, 0) == 0) keys.push_back(key);
    return keys;
  }

  // The rows of `placement` (the whole tensor when it is not sharded) of `key`.
  Tensor read(const std::string& key, const Placement& placement) {
    const Entry& saved = entry(key);
    EMBER_CHECK(saved.shape == placement.full_sizes, op_, "checkpoint '", directory_, "': '", key, "' has shape ",
                describe(saved.shape), ", the module's is ", describe(placement.full_sizes));
    if (!saved.sharded) {
      Tensor whole = file(0).get_tensor(key);
      return placement.sharded ? whole.narrow(0, placement.first_row, placement.rows) : whole;
    }
    const int64_t total = saved.shape[0];
    const int64_t per_rank = (total + world_size_ - 1) / world_size_;
    const int64_t first = placement.sharded ? placement.first_row : 0;
    const int64_t end = first + (placement.sharded ? placement.rows : total);
    std::vector<Tensor> pieces;
    for (int q = 0; q < world_size_; ++q) {
      const int64_t begin_q = std::min(total, q * per_rank), end_q = std::min(total, begin_q + per_rank);
      const int64_t lo = std::max(first, begin_q), hi = std::min(end, end_q);
      if (lo < hi) pieces.push_back(file(q).get_slice(key, lo - begin_q, hi - begin_q));
    }
    if (pieces.empty()) return file(0).get_slice(key, 0, 0);  // rank 0 holds rows of every sharded tensor
    return pieces.size() == 1 ? pieces.front() : cat(pieces, 0);
  }

 private:
  struct Entry {
    std::vector<int64_t> shape;
    bool sharded = false;
  };

  const Entry& entry(const std::string& key) const {
    auto it = entries_.find(key);
    EMBER_CHECK(it != entries_.end(), op_, "checkpoint '", directory_, "' has no tensor '", key, "'");
    return it->second;
  }

  io::SafeOpen& file(int rank) {
    auto it = files_.find(rank);
    if (it == files_.end())
      it = files_.emplace(rank, io::SafeOpen(directory_ + "/rank_" + std::to_string(rank) + ".safetensors")).first;
    return it->second;
  }

  std::string directory_;
  const char* op_;
  int world_size_ = 0;
  std::map<std::string, Entry> entries_;
  std::map<int, io::SafeOpen> files_;
};

}  // namespace

OrderedDict<std::string, Tensor> get_full_state_dict(const nn::Module& module) {
  OrderedDict<std::string, Tensor> full("tensor");
  for (const auto& item : module.state_dict()) {
    auto shard = sharded_parameter(item.value(), item.key(), "get_full_state_dict");
    full.insert(item.key(), shard ? gather(*shard) : item.value());
  }
  return full;
}

void set_full_state_dict(nn::Module& module, const OrderedDict<std::string, Tensor>& state_dict) {
  const char* op = "set_full_state_dict";
  std::vector<std::string> problems;
  std::vector<std::pair<Tensor, Tensor>> copies;  // destination, source rows
  std::set<std::string> known;
  for (const auto& item : module.state_dict()) {
    known.insert(item.key());
    const Placement placement = placement_of(sharded_parameter(item.value(), item.key(), op), item.value());
    const Tensor* source = state_dict.find(item.key());
    if (!source) {
      problems.push_back("missing key '" + item.key() + "'");
    } else if (source->sizes() != placement.full_sizes || source->scalar_type() != item.value().scalar_type()) {
      problems.push_back("'" + item.key() + "': expected " + dtype_name(item.value().scalar_type()) + " " +
                         describe(placement.full_sizes) + ", got " + dtype_name(source->scalar_type()) + " " +
                         describe(source->sizes()));
    } else {
      copies.emplace_back(item.value(),
                          placement.sharded ? source->narrow(0, placement.first_row, placement.rows) : *source);
    }
  }
  for (const auto& item : state_dict)
    if (!known.count(item.key())) problems.push_back("unexpected key '" + item.key() + "'");
  EMBER_CHECK(problems.empty(), op, problems);
  NoGradGuard no_grad;
  for (auto& [destination, source] : copies) destination.copy_(source);
}

void save_sharded_checkpoint(const std::string& directory, const nn::Module& module,
                             const optim::Optimizer& optimizer, int64_t step, const io::Metadata& metadata) {
  const char* op = "save_sharded_checkpoint";
  const int rank = get_rank(), world_size = get_world_size();
  io::TensorList local;
  nlohmann::json tensors = nlohmann::json::object();
  // A sharded piece goes to every rank's file, a replicated tensor to rank 0's.
  auto add = [&](const std::string& key, const Tensor& value, const Placement& placement) {
    tensors[key] = {{"shape", placement.full_sizes}, {"sharded", placement.sharded}};
    if ((placement.sharded && placement.rows > 0) || (!placement.sharded && rank == 0))
      local.emplace_back(key, value);
  };
  for (const auto& item : module.state_dict()) {
    auto shard = sharded_parameter(item.value(), item.key(), op);
    if (shard)
      EMBER_CHECK(shard->group->process_group()->size() == world_size, op, "parameter '", item.key(),
                  "' is sharded over ", shard->group->process_group()->size(), " of the ", world_size,
                  " ranks; checkpoints shard over the whole world");
    add("model." + item.key(), item.value(), placement_of(shard, item.value()));
  }

  const std::vector<std::string> names = optimizer_parameter_names(module, optimizer, op);
  const std::vector<Tensor> params = optimizer.parameters();
  const optim::OptimizerStateDict state = optimizer.state_dict();
  for (const auto& [key, value] : state.tensors) {
    auto state_key = split_state_key(key);
    if (!state_key) {
      add("optim." + key, value, placement_of(std::nullopt, value));
      continue;
    }
    const auto& [index, name] = *state_key;
    auto shard = find_shard(params[index]);
    // Per-parameter tensors of the shard's shape are sharded like it; others are replicated.
    if (shard && value.sizes() != params[index].sizes()) shard.reset();
    add(optimizer_state_key(names[index], name), value, placement_of(shard, value));
  }
  nlohmann::json scalars = nlohmann::json::object();
  for (const auto& [key, value] : state.scalars) {
    auto state_key = split_state_key(key);
    scalars[state_key ? optimizer_state_key(names[state_key->first], state_key->second) : "optim." + key] = value;
  }

  std::filesystem::create_directories(directory);
  io::save_safetensors(directory + "/rank_" + std::to_string(rank) + ".safetensors", local);
  barrier();
  if (rank == 0) {
    const nlohmann::json index = {{"format", kFormat},   {"world_size", world_size}, {"step", step},
                                  {"metadata", metadata}, {"scalars", scalars},      {"tensors", tensors}};
    write_file_atomically(directory + "/index.json", index.dump(1), op);
  }
  barrier();
}

namespace {

// The parsed index.json of a sharded checkpoint; `read` runs on it, JSON errors become
// ember::Error naming the directory.
template <typename Read>
auto with_index(const std::string& directory, const char* op, const Read& read) {
  try {
    const nlohmann::json index = nlohmann::json::parse(read_file(directory + "/index.json", op));
    EMBER_CHECK(index.value("format", "") == kFormat, op, "checkpoint '", directory, "': format '",
                index.value("format", ""), "', expected '", kFormat, "'");
    return read(index);
  } catch (const nlohmann::json::exception& e) {
    EMBER_FAIL(op, "checkpoint '", directory, "': bad index.json: ", e.what());
  }
}

LoadedCheckpoint info_of(const nlohmann::json& index) {
  return {index.at("step").get<int64_t>(), index.at("metadata").get<io::Metadata>()};
}

}  // namespace

LoadedCheckpoint read_sharded_checkpoint_info(const std::string& directory) {
  return with_index(directory, "read_sharded_checkpoint_info", info_of);
}

LoadedCheckpoint load_sharded_checkpoint(const std::string& directory, nn::Module& module,
                                         optim::Optimizer& optimizer) {
  const char* op = "load_sharded_checkpoint";
  return with_index(directory, op, [&](const nlohmann::json& index) {
    CheckpointReader reader(directory, index, op);

    std::vector<std::pair<Tensor, Tensor>> copies;
    std::set<std::string> model_keys;
    for (const auto& item : module.state_dict()) {
      const std::string key = "model." + item.key();
      model_keys.insert(key);
      Tensor value = reader.read(key, placement_of(sharded_parameter(item.value(), item.key(), op), item.value()));
      EMBER_CHECK(value.scalar_type() == item.value().scalar_type(), op, "checkpoint '", directory, "': '", key,
                  "' is ", dtype_name(value.scalar_type()), ", the module's is ",
                  dtype_name(item.value().scalar_type()));
      copies.emplace_back(item.value(), value);
    }
    for (const std::string& key : reader.keys_with_prefix("model."))
      EMBER_CHECK(model_keys.count(key), op, "checkpoint '", directory, "': unexpected key '", key, "'");

    optim::OptimizerStateDict state;
    const std::vector<std::string> names = optimizer_parameter_names(module, optimizer, op);
    const std::vector<Tensor> params = optimizer.parameters();
    for (const std::string& key : reader.keys_with_prefix("optim.param_groups."))
      state.tensors[key.substr(6)] = reader.read(key, {reader.shape(key), 0, 0, false});
    for (size_t i = 0; i < params.size(); ++i) {
      const std::string prefix = optimizer_state_key(names[i], "");
      for (const std::string& key : reader.keys_with_prefix(prefix)) {
        auto shard = find_shard(params[i]);
        if (shard && reader.shape(key) != shard->parameter->full_sizes) shard.reset();
        const Placement placement = shard ? placement_of(shard, params[i]) : Placement{reader.shape(key), 0, 0, false};
        state.tensors["state." + std::to_string(i) + "." + key.substr(prefix.size())] = reader.read(key, placement);
      }
    }
    for (const auto& [key, value] : index.at("scalars").items()) {
      if (key.rfind("optim.state.", 0) == 0) {
        const size_t slash = key.rfind('/');
        const std::string parameter = key.substr(12, slash - 12);
        auto it = std::find(names.begin(), names.end(), parameter);
        if (it == names.end()) continue;
        const std::string index_key = "state." + std::to_string(it - names.begin()) + "." + key.substr(slash + 1);
        state.scalars[index_key] = value.get<double>();
      } else if (key.rfind("optim.", 0) == 0) {
        state.scalars[key.substr(6)] = value.get<double>();
      }
    }
    optimizer.load_state_dict(state);
    NoGradGuard no_grad;
    for (auto& [destination, source] : copies) destination.copy_(source);
    return info_of(index);
  });
}

}  // namespace ember::distributed::fsdp
