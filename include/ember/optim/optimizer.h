// ember::optim::Optimizer: the base of the optimizers (SGD, Adam, AdamW, ...), as
// torch::optim::Optimizer.
// Parameters come in groups, each with its own options; per-parameter state (momentum
// buffers, moment estimates) is created lazily on the first step that sees a gradient.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "ember/tensor.h"

namespace ember::optim {

using LossClosure = std::function<Tensor()>;

// A snapshot of an optimizer as flat named tensors and numbers, so that it can be written
// to a safetensors file (tensors + metadata). Parameters are numbered in group order, as
// in PyTorch:
//   tensors["param_groups.<g>.params"]   int64 indices of group g's parameters
//   scalars["param_groups.<g>.<option>"] the group's hyperparameters (lr, ...; bools as 0/1)
//   tensors["state.<i>.<name>"]          parameter i's state tensors (exp_avg, ...)
//   scalars["state.<i>.<name>"]          parameter i's state numbers (step)
struct OptimizerStateDict {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, double> scalars;
};

// The options of an optimizer (lr, ...). A user's own options derive from
// OptimizerCloneableOptions<Self>, which supplies clone(); the rest throw until overridden,
// as in libtorch (get_lr/set_lr for schedulers, hyperparameters for state dicts).
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const;
  virtual double get_lr() const;
  virtual void set_lr(double lr);
  // The hyperparameters by name, bools as 0/1 (for state dicts).
  virtual std::map<std::string, double> hyperparameters() const;
  // Sets every hyperparameter from `values`; throws naming a missing one.
  virtual void set_hyperparameters(const std::map<std::string, double>& values);
};

template <typename Derived>
class OptimizerCloneableOptions : public OptimizerOptions {
 public:
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
};

// Options of the same type are equal when all their hyperparameters are (libtorch's
// per-type operator==).
template <typename Options, std::enable_if_t<std::is_base_of_v<OptimizerOptions, Options>, int> = 0>
bool operator==(const Options& a, const Options& b) {
  return a.hyperparameters() == b.hyperparameters();
}

class OptimizerParamState {
 public:
  virtual ~OptimizerParamState() = default;
  virtual std::unique_ptr<OptimizerParamState> clone() const = 0;
  // Adds this state under `prefix` ("state.3.") as deep copies.
  virtual void save(const std::string& prefix, OptimizerStateDict& out) const = 0;
  // Reads this state from `prefix`; tensors are copied and cast to `param`'s dtype.
  virtual void load(const std::string& prefix, const OptimizerStateDict& in, const Tensor& param) = 0;
};

class OptimizerParamGroup {
 public:
  // Without options the group takes a copy of the optimizer's defaults.
  OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}  // NOLINT
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  OptimizerParamGroup(const OptimizerParamGroup& other);
  OptimizerParamGroup& operator=(const OptimizerParamGroup& other);
  OptimizerParamGroup(OptimizerParamGroup&&) = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) = default;

  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
};

class Optimizer {
 public:
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  virtual ~Optimizer() = default;

  // Runs `closure` (with grad mode on) if given, then updates every parameter that has a
  // gradient, under NoGradGuard. Returns the closure's loss (undefined without one).
  virtual Tensor step(LossClosure closure = nullptr) = 0;

  void add_param_group(const OptimizerParamGroup& param_group);
  // Drops (set_to_none, the default as in libtorch 2.x) or zeroes every parameter's gradient.
  void zero_grad(bool set_to_none = true);

  // Appends `parameters` to the first group (libtorch's add_parameters, which warns that it
  // will be removed; add_param_group is its replacement).
  void add_parameters(const std::vector<Tensor>& parameters);
  // All parameters, in group order.
  std::vector<Tensor> parameters() const;
  size_t size() const;
  OptimizerOptions& defaults() { return *defaults_; }
  std::vector<OptimizerParamGroup>& param_groups() { return param_groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const { return param_groups_; }
  // Per-parameter state keyed by the parameter's TensorImpl (as libtorch).
  std::unordered_map<void*, std::unique_ptr<OptimizerParamState>>& state() { return state_; }

  // A deep copy of the groups' hyperparameters and the parameter states.
  OptimizerStateDict state_dict() const;
  // Restores hyperparameters and states saved by state_dict() of an optimizer of the same
  // kind over parameters of the same shapes and grouping; throws naming the first mismatch.
  void load_state_dict(const OptimizerStateDict& state_dict);

 protected:
  Optimizer(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults);
  // An empty state of this optimizer's kind, to be filled by load(); throws unless overridden
  // (an optimizer without per-parameter state has none to load).
  virtual std::unique_ptr<OptimizerParamState> make_param_state() const;
  // Throws if the options are invalid (negative lr, ...); accepts any unless overridden.
  virtual void validate(const OptimizerOptions& options) const;
  // Validates the defaults and every group; derived constructors call it (virtual calls do
  // not reach them from the base constructor).
  void validate_all() const;
  // Runs the closure with grad mode on, as every step() does first.
  static Tensor run_closure(const LossClosure& closure);
  // The step of the optimizers that update each parameter on its own: runs the closure, then
  // update(param, options) under NoGradGuard for every parameter that has a gradient, with
  // its group's options as `Options`; returns the closure's loss.
  template <typename Options, typename Update>
  Tensor update_parameters(const LossClosure& closure, Update update) {
    return update_each_parameter(closure, [&update](Tensor& param, const OptimizerOptions& options) {
      update(param, static_cast<const Options&>(options));
    });
  }
  // For the optimizers that count their steps on the host, where a graph replay would not
  // advance the count: throws naming `optimizer` while a graph capture records.
  static void refuse_graph_capture(const char* optimizer);
  // The state of `param` as `State`, created by make_param_state() when absent.
  template <typename State>
  State& state_for(const Tensor& param) {
    auto& slot = state_[param.unsafeGetTensorImpl()];
    if (!slot) slot = make_param_state();
    return static_cast<State&>(*slot);
  }

  std::vector<OptimizerParamGroup> param_groups_;
  std::unordered_map<void*, std::unique_ptr<OptimizerParamState>> state_;
  std::unique_ptr<OptimizerOptions> defaults_;

 private:
  // Checks the parameters and appends the group, with the defaults when it has no options.
  void append_group(const OptimizerParamGroup& param_group);
  Tensor update_each_parameter(const LossClosure& closure,
                               const std::function<void(Tensor& param, const OptimizerOptions& options)>& update);
};

}  // namespace ember::optim
