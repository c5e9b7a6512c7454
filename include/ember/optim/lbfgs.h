// L-BFGS with libtorch's algorithm (torch/csrc/api/src/optim/lbfgs.cpp, itself a port of
// torch/optim/lbfgs.py): step(closure) runs up to max_iter iterations, each taking the
// two-loop L-BFGS direction over the last history_size steps and either a fixed step of lr
// or a strong Wolfe line search (line_search_fn "strong_wolfe", cubic interpolation). All
// parameters form one flat vector; one parameter group only. max_eval defaults to
// max_iter * 5 / 4. In state_dict(), line_search_fn is the number 1 for "strong_wolfe" and 0
// for none, and the state lives under parameter 0 (as libtorch).
#pragma once
#include <deque>
#include <optional>
#include <string>
#include <tuple>

#include "ember/arg.h"
#include "ember/optim/optimizer.h"

namespace ember::optim {

struct LBFGSOptions : public OptimizerOptions {
  LBFGSOptions(double lr = 1) : lr_(lr) {}  // NOLINT
  EMBER_ARG(double, lr);
  EMBER_ARG(int64_t, max_iter) = 20;
  EMBER_ARG(std::optional<int64_t>, max_eval) = std::nullopt;
  EMBER_ARG(double, tolerance_grad) = 1e-7;
  EMBER_ARG(double, tolerance_change) = 1e-9;
  EMBER_ARG(int64_t, history_size) = 100;
  EMBER_ARG(std::optional<std::string>, line_search_fn) = std::nullopt;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<LBFGSOptions>(*this); }
  double get_lr() const override { return lr(); }
  void set_lr(double value) override { lr(value); }
  std::map<std::string, double> hyperparameters() const override;
  void set_hyperparameters(const std::map<std::string, double>& values) override;
};

struct LBFGSParamState : public OptimizerParamState {
  EMBER_ARG(int64_t, func_evals) = 0;
  EMBER_ARG(int64_t, n_iter) = 0;
  EMBER_ARG(double, t) = 0;
  EMBER_ARG(double, prev_loss) = 0;
  EMBER_ARG(Tensor, d) = {};
  EMBER_ARG(Tensor, H_diag) = {};
  EMBER_ARG(Tensor, prev_flat_grad) = {};
  EMBER_ARG(std::deque<Tensor>, old_dirs);
  EMBER_ARG(std::deque<Tensor>, old_stps);
  EMBER_ARG(std::deque<Tensor>, ro);
  EMBER_ARG(std::optional<std::vector<Tensor>>, al) = std::nullopt;

 public:
  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(const std::string& prefix, OptimizerStateDict& out) const override;
  void load(const std::string& prefix, const OptimizerStateDict& in, const Tensor& param) override;
};

class LBFGS : public Optimizer {
 public:
  LBFGS(std::vector<OptimizerParamGroup> param_groups, LBFGSOptions defaults = {});
  LBFGS(std::vector<Tensor> params, LBFGSOptions defaults = {})
      : LBFGS(std::vector<OptimizerParamGroup>{std::move(params)}, std::move(defaults)) {}
  // `closure` (required) clears the gradients, computes the loss, runs backward and returns
  // the loss. Returns the loss of the first evaluation.
  Tensor step(LossClosure closure = nullptr) override;

 protected:
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
  void validate(const OptimizerOptions& options) const override;

 private:
  Tensor gather_flat_grad() const;
  int64_t numel() const;
  // params += step_size * update (update is flat).
  void add_grad(double step_size, const Tensor& update);
  void set_param(const std::vector<Tensor>& values);
  std::vector<Tensor> clone_param() const;
  // The loss and flat gradient at params + t * d; the parameters are restored to `x` after.
  std::tuple<double, Tensor> directional_evaluate(const LossClosure& closure, const std::vector<Tensor>& x, double t,
                                                  const Tensor& d);
};

}  // namespace ember::optim
