// Module system: registration, PyTorch's names and order, holders, modes, dtype conversion,
// state_dict / load_state_dict and their errors, containers.
#include <sstream>
#include <utility>

#include "nn_testing.h"

namespace ember::nntest {
namespace {

namespace nn = ember::nn;

// stages: a ModuleList of ModuleLists, plus a root buffer registered between children.
struct NestedImpl : nn::Module {
  NestedImpl() {
    embed = register_module("embed", nn::Embedding(5, 4));
    auto first = nn::ModuleList(nn::Linear(4, 4), nn::LayerNorm(nn::LayerNormOptions({4})));
    auto second = nn::ModuleList(nn::Linear(nn::LinearOptions(4, 4).bias(false)));
    stages = register_module("stages", nn::ModuleList(first, second));
    register_buffer("scale", ones({1}));
    head = register_module("head", nn::Linear(4, 2));
  }
  nn::Embedding embed{nullptr};
  nn::ModuleList stages{nullptr};
  nn::Linear head{nullptr};
};
EMBER_MODULE(Nested);

std::vector<std::vector<int64_t>> shapes(const OrderedDict<std::string, Tensor>& dict) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& item : dict) out.push_back(item.value().sizes());
  return out;
}

TEST(Module, LstmStateDictKeysArePyTorchs) {
  nn::LSTM lstm(nn::LSTMOptions(10, 16).num_layers(2).bidirectional(true));
  auto dict = lstm->state_dict();
  const std::vector<std::string> expected = {
      "weight_ih_l0",         "weight_hh_l0",         "bias_ih_l0",         "bias_hh_l0",
      "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse",
      "weight_ih_l1",         "weight_hh_l1",         "bias_ih_l1",         "bias_hh_l1",
      "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse"};
  EXPECT_EQ(dict.keys(), expected);
  const std::vector<std::vector<int64_t>> expected_shapes = {
      {64, 10}, {64, 16}, {64}, {64}, {64, 10}, {64, 16}, {64}, {64},
      {64, 32}, {64, 16}, {64}, {64}, {64, 32}, {64, 16}, {64}, {64}};
  EXPECT_EQ(shapes(dict), expected_shapes);
  EXPECT_EQ(lstm->named_parameters().keys(), expected);
}

TEST(Module, GruWithoutBiasHasOnlyWeights) {
  nn::GRU gru(nn::GRUOptions(3, 5).num_layers(2).bias(false));
  EXPECT_EQ(gru->state_dict().keys(), (std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "weight_ih_l1",
                                                                  "weight_hh_l1"}));
  EXPECT_EQ(gru->named_parameters()["weight_ih_l1"].sizes(), (std::vector<int64_t>{15, 5}));
}

TEST(Module, NestedModuleListNamesArePyTorchs) {
  Nested net;
  EXPECT_EQ(net->state_dict().keys(),
            (std::vector<std::string>{"scale", "embed.weight", "stages.0.0.weight", "stages.0.0.bias",
                                      "stages.0.1.weight", "stages.0.1.bias", "stages.1.0.weight", "head.weight",
                                      "head.bias"}));
  EXPECT_EQ(net->named_parameters().keys(),
            (std::vector<std::string>{"embed.weight", "stages.0.0.weight", "stages.0.0.bias", "stages.0.1.weight",
                                      "stages.0.1.bias", "stages.1.0.weight", "head.weight", "head.bias"}));
  EXPECT_EQ(net->named_buffers().keys(), (std::vector<std::string>{"scale"}));
  EXPECT_EQ(net->named_modules().keys(), (std::vector<std::string>{"", "embed", "stages", "stages.0", "stages.0.0",
                                                                   "stages.0.1", "stages.1", "stages.1.0", "head"}));
  EXPECT_EQ(net->named_modules("model", false).keys()[0], "model.embed");
  EXPECT_EQ(net->named_children().keys(), (std::vector<std::string>{"embed", "stages", "head"}));
  EXPECT_EQ(net->children().size(), 3u);
  EXPECT_EQ(net->parameters().size(), 8u);
  EXPECT_EQ(net->parameters(/*recurse=*/false).size(), 0u);
  EXPECT_EQ(net->stages->at<nn::ModuleListImpl>(0).size(), 2u);
  EXPECT_EQ(net->stages->ptr<nn::ModuleListImpl>(1)->ptr<nn::LinearImpl>(0)->options.bias(), false);
}

TEST(Module, ContainersNameTheirChildren) {
  nn::Sequential seq(nn::Linear(2, 3), nn::ReLU(), nn::Linear(3, 1));
  EXPECT_EQ(seq->state_dict().keys(), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_EQ(seq->size(), 3u);

  nn::Sequential named({{"fc", nn::Linear(2, 3)}, {"act", nn::GELU()}, {"out", nn::Linear(3, 1)}});
  EXPECT_EQ(named->named_children().keys(), (std::vector<std::string>{"fc", "act", "out"}));
  EXPECT_EQ(named->ptr<nn::LinearImpl>(2)->options.in_features(), 3);

  nn::ModuleDict dict(std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>>{
      {"encoder", nn::Linear(2, 2).ptr()}, {"decoder", nn::Linear(2, 3).ptr()}});
  dict->insert("encoder", nn::Linear(2, 5));  // replaced in place
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"encoder", "decoder"}));
  EXPECT_EQ(dict->at<nn::LinearImpl>("encoder").options.out_features(), 5);
  EXPECT_EQ(dict->state_dict().keys(),
            (std::vector<std::string>{"encoder.weight", "encoder.bias", "decoder.weight", "decoder.bias"}));
  dict->pop("encoder");
  EXPECT_FALSE(dict->contains("encoder"));
  EXPECT_TRUE(throws_error([&] { (*dict)["missing"]; }, {"ModuleDict", "missing"}));
  EXPECT_TRUE(throws_error([&] { dict->ptr<nn::ReLUImpl>("decoder"); }, {"ModuleDict", "decoder", "Linear"}));
}

TEST(Module, SequentialChainsForward) {
  manual_seed(1);
  nn::Sequential seq(nn::Linear(3, 4), nn::Tanh(), nn::Linear(4, 2));
  seq->to(kFloat64);
  Tensor x = uniform({5, 3}, 2);
  auto fc1 = seq->ptr<nn::LinearImpl>(0);
  auto fc2 = seq->ptr<nn::LinearImpl>(2);
  Tensor expected = fc2->forward(fc1->forward(x).tanh());
  EXPECT_TRUE(all_close(seq->forward(x), values(expected)));
  EXPECT_TRUE(all_close(seq(x), values(expected)));
}

TEST(Module, HolderPattern) {
  nn::Linear empty{nullptr};
  EXPECT_TRUE(empty.is_empty());
  EXPECT_FALSE(static_cast<bool>(empty));
  EXPECT_TRUE(throws_error([&] { empty->forward(zeros({1, 1})); }, {"empty module holder"}));
  nn::Linear assigned = nullptr;
  assigned = nn::Linear(nn::LinearOptions(4, 8));
  EXPECT_EQ(assigned->weight.sizes(), (std::vector<int64_t>{8, 4}));
  nn::Linear shared = assigned;  // a second handle to the same module
  EXPECT_EQ(shared.get(), assigned.get());
  nn::Linear lin(4, 8);
  EXPECT_EQ(lin->options.out_features(), 8);
  EXPECT_NE(lin->as<nn::LinearImpl>(), nullptr);
  EXPECT_NE(lin->as<nn::Linear>(), nullptr);
  EXPECT_EQ(lin->as<nn::ReLUImpl>(), nullptr);
  // libtorch's name: the demangled class with its namespaces.
  EXPECT_EQ(lin->name(), "ember::nn::LinearImpl");
  const nn::Module& constant = *lin;
  EXPECT_EQ(constant.as<nn::Linear>(), lin.get());
  EXPECT_EQ(constant.as<const nn::LinearImpl>(), lin.get());
  EXPECT_EQ(constant.as<nn::ReLU>(), nullptr);
}

TEST(Module, RegistrationErrorsNameTheEntry) {
  struct Bad : nn::Module {};
  auto m = std::make_shared<Bad>();
  m->register_parameter("w", zeros({2}));
  EXPECT_TRUE(throws_error([&] { m->register_parameter("w", zeros({2})); }, {"register_parameter", "'w'", "already"}));
  EXPECT_TRUE(throws_error([&] { m->register_buffer("w", zeros({2})); }, {"register_buffer", "'w'"}));
  EXPECT_TRUE(throws_error([&] { m->register_parameter("a.b", zeros({2})); }, {"register_parameter", "dot"}));
  EXPECT_TRUE(throws_error([&] { m->register_module("", nn::Linear(1, 1)); }, {"register_module", "empty"}));
  EXPECT_TRUE(throws_error([&] { m->register_module("x", nn::Linear(nullptr)); }, {"empty module holder"}));
  Tensor computed = zeros({2}).requires_grad_() * 2;
  EXPECT_TRUE(throws_error([&] { m->register_parameter("c", computed); }, {"register_parameter", "'c'", "leaf"}));
  EXPECT_TRUE(throws_error([&] { m->register_parameter("i", zeros({2}, kInt64)); }, {"floating point"}));
  EXPECT_TRUE(m->register_parameter("frozen", zeros({2}), /*requires_grad=*/false).defined());
  EXPECT_FALSE(m->named_parameters()["frozen"].requires_grad());
  EXPECT_TRUE(m->named_parameters()["w"].requires_grad());
}

TEST(Module, NonPersistentBuffersStayOutOfStateDict) {
  struct WithCache : nn::Module {
    WithCache() {
      register_buffer("kept", zeros({2}));
      register_buffer("cache", zeros({3}), /*persistent=*/false);
    }
  };
  auto m = std::make_shared<WithCache>();
  EXPECT_EQ(m->named_buffers().keys(), (std::vector<std::string>{"kept", "cache"}));
  EXPECT_EQ(m->state_dict().keys(), (std::vector<std::string>{"kept"}));
}

TEST(Module, TiedParametersAppearOnceInParametersButTwiceInStateDict) {
  // Tie through registration, as PyTorch's `head.weight = embed.weight` does.
  struct HeadImpl : nn::Module {
    explicit HeadImpl(const Tensor& shared) { weight = register_parameter("weight", shared); }
    Tensor weight;
  };
  struct TiedModel : nn::Module {
    TiedModel() {
      embed = register_module("embed", nn::Embedding(6, 3));
      head = register_module("head", std::make_shared<HeadImpl>(embed->weight));
    }
    nn::Embedding embed{nullptr};
    std::shared_ptr<HeadImpl> head;
  };
  auto model = std::make_shared<TiedModel>();
  EXPECT_EQ(model->named_parameters().keys(), (std::vector<std::string>{"embed.weight"}));
  EXPECT_EQ(model->state_dict().keys(), (std::vector<std::string>{"embed.weight", "head.weight"}));
}

TEST(Module, TrainEvalRecurse) {
  Nested net;
  EXPECT_TRUE(net->is_training());
  net->eval();
  for (const auto& m : net->modules()) EXPECT_FALSE(m->is_training());
  net->train();
  for (const auto& m : net->modules()) EXPECT_TRUE(m->is_training());
}

TEST(Module, ToConvertsInPlaceSoMembersSeeTheNewDtype) {
  nn::Linear lin(3, 2);
  Tensor handle = lin->weight;  // a handle taken before the conversion
  std::vector<double> before = values(lin->weight);
  lin->to(kFloat64);
  EXPECT_EQ(lin->weight.scalar_type(), kFloat64);
  EXPECT_EQ(handle.scalar_type(), kFloat64);
  EXPECT_TRUE(handle.is_same(lin->named_parameters()["weight"]));
  EXPECT_TRUE(handle.requires_grad());
  EXPECT_TRUE(all_close(lin->weight, before, {0, 0}));
  EXPECT_EQ(lin->forward(uniform({1, 3}, 1)).scalar_type(), kFloat64);

  nn::Embedding embed(4, 2);
  embed->register_buffer("positions", arange(4));
  embed->to(kBFloat16);
  EXPECT_EQ(embed->weight.scalar_type(), kBFloat16);
  EXPECT_EQ(embed->named_buffers()["positions"].scalar_type(), kInt64);  // integers stay
}

TEST(Module, ZeroGrad) {
  nn::Linear lin(3, 2);
  lin->forward(ones({1, 3})).sum().backward();
  ASSERT_TRUE(lin->weight.grad().defined());
  lin->zero_grad(/*set_to_none=*/false);
  EXPECT_TRUE(all_close(lin->weight.grad(), std::vector<double>(6, 0.0), {0, 0}));
  lin->zero_grad();
  EXPECT_FALSE(lin->weight.grad().defined());
  EXPECT_FALSE(lin->bias.grad().defined());
}

TEST(Module, LoadStateDictCopiesValues) {
  manual_seed(3);
  Nested source, target;
  auto dict = source->state_dict();
  // state_dict shares storage and is detached.
  EXPECT_FALSE(dict["head.weight"].requires_grad());
  auto result = target->load_state_dict(dict);
  EXPECT_TRUE(result.missing_keys.empty());
  EXPECT_TRUE(result.unexpected_keys.empty());
  for (const auto& item : source->state_dict()) {
    EXPECT_TRUE(all_close(target->state_dict()[item.key()], values(item.value()), {0, 0})) << item.key();
  }
  // The copy is independent of the source.
  {
    NoGradGuard no_grad;
    source->head->weight.fill_(7);
  }
  EXPECT_NE(values(target->head->weight)[0], 7);
  EXPECT_TRUE(target->head->weight.requires_grad());
}

TEST(Module, LoadStateDictReportsEveryProblemByName) {
  Nested net;
  auto dict = net->state_dict();
  OrderedDict<std::string, Tensor> broken;
  for (const auto& item : dict) {
    if (item.key() == "embed.weight") continue;  // missing
    if (item.key() == "head.weight") {
      broken.insert(item.key(), zeros({4, 2}));  // transposed shape
    } else if (item.key() == "head.bias") {
      broken.insert(item.key(), zeros({2}, kFloat64));  // dtype
    } else {
      broken.insert(item.key(), item.value());
    }
  }
  broken.insert("stages.9.weight", zeros({1}));  // unexpected
  std::vector<double> before = values(net->stages->ptr<nn::ModuleListImpl>(0)->ptr<nn::LinearImpl>(0)->weight);
  broken["stages.0.0.weight"] = zeros({4, 4});
  EXPECT_TRUE(throws_error([&] { net->load_state_dict(broken); },
                           {"load_state_dict", "Nested", "missing keys: 'embed.weight'",
                            "unexpected keys: 'stages.9.weight'", "'head.weight': checkpoint has float32 [4, 2], module has float32 [2, 4]",
                            "'head.bias': checkpoint has float64 [2], module has float32 [2]"}));
  // Nothing was copied.
  EXPECT_TRUE(all_close(net->stages->ptr<nn::ModuleListImpl>(0)->ptr<nn::LinearImpl>(0)->weight, before, {0, 0}));

  // strict=false tolerates key differences but not mismatched tensors.
  EXPECT_TRUE(throws_error([&] { net->load_state_dict(broken, false); }, {"'head.weight'", "'head.bias'"}));
  broken.pop("head.weight");
  broken.pop("head.bias");
  auto result = net->load_state_dict(broken, /*strict=*/false);
  EXPECT_EQ(result.missing_keys, (std::vector<std::string>{"embed.weight", "head.weight", "head.bias"}));
  EXPECT_EQ(result.unexpected_keys, (std::vector<std::string>{"stages.9.weight"}));
  EXPECT_TRUE(all_close(net->stages->ptr<nn::ModuleListImpl>(0)->ptr<nn::LinearImpl>(0)->weight,
                        std::vector<double>(16, 0.0), {0, 0}));
}

TEST(Module, ApplyVisitsSelfThenChildrenDepthFirst) {
  Nested net;
  // libtorch's order (pre-order); the named forms pass the dotted name from name_prefix.
  const std::vector<std::string> expected_names = {"net",          "net.embed",          "net.stages",
                                                   "net.stages.0", "net.stages.0.0",     "net.stages.0.1",
                                                   "net.stages.1", "net.stages.1.0",     "net.head"};
  std::vector<std::string> names;
  net->apply([&](const std::string& name, nn::Module&) { names.push_back(name); }, "net");
  EXPECT_EQ(names, expected_names);
  std::vector<const nn::Module*> visited, const_visited, pointer_visited;
  net->apply([&](nn::Module& m) { visited.push_back(&m); });
  std::as_const(*net).apply([&](const nn::Module& m) { const_visited.push_back(&m); });
  net->apply([&](const std::shared_ptr<nn::Module>& m) { pointer_visited.push_back(m.get()); });
  ASSERT_EQ(visited.size(), 9u);
  EXPECT_EQ(visited.front(), net.get());
  EXPECT_EQ(visited[1], net->embed.get());
  EXPECT_EQ(visited.back(), net->head.get());
  EXPECT_EQ(const_visited, visited);
  EXPECT_EQ(pointer_visited, visited);
  std::vector<std::string> pointer_names;
  net->apply([&](const std::string& name, const std::shared_ptr<nn::Module>&) { pointer_names.push_back(name); },
             "net");
  EXPECT_EQ(pointer_names, expected_names);
  // A typical custom initialisation.
  net->apply([](nn::Module& m) {
    if (auto* linear = m.as<nn::Linear>()) nn::init::zeros_(linear->weight);
  });
  EXPECT_TRUE(all_close(net->head->weight, std::vector<double>(8, 0.0), {0, 0}));
}

TEST(Module, PrettyPrintShowsTheTree) {
  nn::Sequential seq(nn::Linear(2, 3), nn::Dropout(0.25));
  std::ostringstream out;
  out << *seq;
  EXPECT_EQ(out.str(),
            "ember::nn::Sequential(\n  (0): ember::nn::Linear(in_features=2, out_features=3, bias=true)\n"
            "  (1): ember::nn::Dropout(p=0.25, inplace=false)\n)");
  // A module without its own pretty_print prints its name; children indent under it.
  std::ostringstream nested;
  nested << *Nested();
  const std::string text = nested.str();
  EXPECT_EQ(text.substr(0, text.find('\n')), std::string(Nested()->name()) + "(");
  EXPECT_NE(text.find("\n  (stages): ember::nn::ModuleList(\n    (0): ember::nn::ModuleList(\n"
                      "      (0): ember::nn::Linear(in_features=4, out_features=4, bias=true)\n"
                      "      (1): ember::nn::LayerNorm([4], eps=1e-05, elementwise_affine=true)\n    )\n"),
            std::string::npos)
      << text;
}

TEST(Module, PrettyPrintFollowsLibtorch) {
  auto printed = [](const nn::Module& module) {
    std::ostringstream out;
    out << module;
    return out.str();
  };
  EXPECT_EQ(printed(*nn::Conv1d(3, 4, 5)), "ember::nn::Conv1d(3, 4, kernel_size=5, stride=1)");
  EXPECT_EQ(printed(*nn::Conv2d(nn::Conv2dOptions(3, 4, {5, 6}).stride({1, 2}).padding(1).dilation(2).groups(1).bias(
                false))),
            "ember::nn::Conv2d(3, 4, kernel_size=[5, 6], stride=[1, 2], padding=[1, 1], dilation=[2, 2], bias=false)");
  EXPECT_EQ(printed(*nn::Conv2d(nn::Conv2dOptions(2, 2, 3).padding(kSame).padding_mode(kCircular))),
            "ember::nn::Conv2d(2, 2, kernel_size=[3, 3], stride=[1, 1], padding='same', padding_mode=kCircular)");
  EXPECT_EQ(printed(*nn::ConvTranspose2d(nn::ConvTranspose2dOptions(3, 4, 5).output_padding(1).stride(2))),
            "ember::nn::ConvTranspose2d(3, 4, kernel_size=[5, 5], stride=[2, 2], output_padding=[1, 1])");
  EXPECT_EQ(printed(*nn::MaxPool1d(nn::MaxPool1dOptions(5))),
            "ember::nn::MaxPool1d(kernel_size=5, stride=5, padding=0, dilation=1, ceil_mode=false)");
  EXPECT_EQ(printed(*nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({5, 6}))),
            "ember::nn::AdaptiveAvgPool2d(output_size=[5, 6])");
  EXPECT_EQ(printed(*nn::BatchNorm1d(4)),
            "ember::nn::BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)");
  EXPECT_EQ(printed(*nn::Upsample(nn::UpsampleOptions().scale_factor(std::vector<double>{0.5, 1.5}).mode(kBilinear))),
            "ember::nn::Upsample(scale_factor=[0.5, 1.5], mode=kBilinear)");
  EXPECT_EQ(printed(*nn::Unflatten(1, std::vector<int64_t>{2, 3})),
            "ember::nn::Unflatten(dim=1, unflattened_size={2, 3})");
  EXPECT_EQ(printed(*nn::LSTMCell(20, 10)), "ember::nn::LSTMCell(20, 10)");
  EXPECT_EQ(printed(*nn::GRU(nn::GRUOptions(4, 5).num_layers(2))),
            "ember::nn::GRU(input_size=4, hidden_size=5, num_layers=2, bias=true, batch_first=false, dropout=0, "
            "bidirectional=false)");
  EXPECT_EQ(printed(*nn::Sigmoid()), "ember::nn::Sigmoid()");
  EXPECT_EQ(printed(*nn::Functional(ember::relu)), "ember::nn::Functional()");
  EXPECT_EQ(printed(*nn::SmoothL1Loss()), "ember::nn::SmoothL1Loss");
  EXPECT_EQ(printed(*nn::TripletMarginLoss(nn::TripletMarginLossOptions().margin(3))),
            "ember::nn::TripletMarginLoss(margin=3, p=2, eps=1e-06, swap=false)");
  EXPECT_EQ(printed(*nn::MultiheadAttention(4, 2)),
            "ember::nn::MultiheadAttention(\n  (out_proj): ember::nn::Linear(in_features=4, out_features=4, bias=true)\n)");
  nn::ParameterList list(ones({1, 2}), ones({3}, kFloat64));
  EXPECT_EQ(printed(*list),
            "ember::nn::ParameterList(\n(0): Parameter containing: [Float of size [1, 2]]\n"
            "(1): Parameter containing: [Double of size [3]]\n)");
}

// ---- clone --------------------------------------------------------------------------------

struct Scaled : nn::Cloneable<Scaled> {
  Scaled() { reset(); }
  void reset() override {
    scale = register_parameter("scale", full({2}, 3.0));
    count = register_buffer("count", zeros({1}, kInt64));
    inner = register_module("inner", nn::Linear(2, 2));
  }
  Tensor scale, count;
  nn::Linear inner{nullptr};
};

bool same_storage(const Tensor& a, const Tensor& b) { return a.data_ptr() == b.data_ptr(); }

TEST(Module, CloneCopiesEveryTensorIntoNewStorage) {
  auto original = std::make_shared<Scaled>();
  {
    NoGradGuard no_grad;
    original->scale.fill_(7);
    original->count.fill_(5);
    original->inner->weight.fill_(0.5);
  }
  auto copy = std::dynamic_pointer_cast<Scaled>(original->clone());
  ASSERT_NE(copy, nullptr);
  // The members point at the clone's own registered tensors, with the original's values.
  EXPECT_TRUE(same_storage(copy->scale, copy->named_parameters()["scale"]));
  EXPECT_TRUE(same_storage(copy->inner->weight, copy->named_parameters()["inner.weight"]));
  EXPECT_NE(copy->inner.get(), original->inner.get());
  for (const auto& item : original->named_parameters()) {
    const Tensor cloned = copy->named_parameters()[item.key()];  // a copy: the dict is a temporary
    EXPECT_FALSE(same_storage(cloned, item.value())) << item.key();
    EXPECT_TRUE(cloned.requires_grad()) << item.key();
    EXPECT_TRUE(testutil::all_equal(cloned, values(item.value()))) << item.key();
  }
  EXPECT_EQ(copy->count.item<int64_t>(), 5);
  EXPECT_FALSE(same_storage(copy->count, original->count));
  {
    NoGradGuard no_grad;
    copy->scale.fill_(1);
  }
  EXPECT_TRUE(all_close(original->scale, {7, 7}, {0, 0}));
}

TEST(Module, CloneOfAPlainModuleThrows) {
  struct Plain : nn::Module {};
  Plain plain;
  EXPECT_TRUE(throws_error([&] { plain.clone(); }, {"clone() has not been implemented", "Cloneable"}));
}

TEST(Module, ContainersCloneTheirModules) {
  nn::Sequential sequential(nn::Linear(3, 4), nn::Functional(ember::relu), nn::BatchNorm1d(4));
  {
    NoGradGuard no_grad;
    sequential->ptr<nn::BatchNorm1dImpl>(2)->running_mean.fill_(2);
  }
  auto copy = std::dynamic_pointer_cast<nn::SequentialImpl>(sequential->clone());
  ASSERT_NE(copy, nullptr);
  ASSERT_EQ(copy->size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NE(copy->ptr(i), sequential->ptr(i));
    EXPECT_EQ(copy->ptr(i)->name(), sequential->ptr(i)->name());
  }
  const auto before = sequential->named_buffers(), after = copy->named_buffers();
  ASSERT_EQ(before.keys(), after.keys());
  EXPECT_TRUE(all_close(after["2.running_mean"], {2, 2, 2, 2}, {0, 0}));
  EXPECT_FALSE(same_storage(after["2.running_mean"], before["2.running_mean"]));
  const Tensor x = uniform({2, 3}, 11, -1, 1, kFloat32);
  sequential->eval();
  copy->eval();
  EXPECT_TRUE(testutil::all_equal(copy->forward(x), values(sequential->forward(x))));

  nn::ModuleList list(nn::Linear(2, 2), nn::Conv1d(1, 2, 3));
  auto list_copy = std::dynamic_pointer_cast<nn::ModuleListImpl>(list->clone());
  ASSERT_NE(list_copy, nullptr);
  EXPECT_NE(list_copy->ptr(1), list->ptr(1));
  EXPECT_TRUE(testutil::all_equal(list_copy->ptr<nn::Conv1dImpl>(1)->weight, values(list->ptr<nn::Conv1dImpl>(1)->weight)));

  nn::ModuleDict dict(std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>>{{"fc", nn::Linear(2, 2).ptr()}});
  auto dict_copy = std::dynamic_pointer_cast<nn::ModuleDictImpl>(dict->clone());
  ASSERT_NE(dict_copy, nullptr);
  EXPECT_EQ(dict_copy->keys(), std::vector<std::string>{"fc"});
  EXPECT_NE((*dict_copy)["fc"], dict["fc"]);

  nn::ParameterList parameters(full({2}, 4.0), zeros({1}));
  parameters[1].requires_grad_(false);
  auto parameters_copy = std::dynamic_pointer_cast<nn::ParameterListImpl>(parameters->clone());
  ASSERT_NE(parameters_copy, nullptr);
  EXPECT_TRUE(all_close((*parameters_copy)[0], {4, 4}, {0, 0}));
  EXPECT_FALSE(same_storage((*parameters_copy)[0], parameters[0]));
  EXPECT_FALSE((*parameters_copy)[1].requires_grad());

  nn::AnyModule any(nn::Linear(2, 3));
  nn::AnyModule any_copy = any.clone();
  EXPECT_NE(any_copy.ptr(), any.ptr());
  EXPECT_TRUE(testutil::all_equal(any_copy.get<nn::LinearImpl>().weight, values(any.get<nn::LinearImpl>().weight)));
  EXPECT_TRUE(nn::AnyModule().clone().is_empty());
}

// ---- forward hooks ------------------------------------------------------------------------------

// Two Tensor arguments around a non-Tensor one, and a second method for call().
struct ScaleAddImpl : nn::Module {
  Tensor forward(const Tensor& x, double scale, const Tensor& y) { return x * scale + y; }
  Tensor half(const Tensor& x) { return x * 0.5; }
};
EMBER_MODULE(ScaleAdd);

TEST(ForwardHooks, PreHooksReplaceTensorArgumentsAndHooksReplaceResults) {
  ScaleAdd m;
  std::vector<std::string> events;
  RemovableHandle pre = m->register_forward_pre_hook([&](nn::Module& module, std::vector<Tensor>& inputs) {
    EXPECT_EQ(&module, m.get());
    events.push_back("pre " + std::to_string(inputs.size()));
    inputs.back() = inputs.back() * 10;
  });
  RemovableHandle post =
      m->register_forward_hook([&](nn::Module&, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
        // The inputs as the pre-hooks left them.
        events.push_back("post " + std::to_string(static_cast<int>(values(inputs.back())[1])));
        outputs[0] = outputs[0] + 1;
      });
  Tensor x = tensor({1.0, 2.0}, kFloat64), y = tensor({1.0, 2.0}, kFloat64);
  EXPECT_EQ(values(m(x, 3.0, y)), (std::vector<double>{3 + 10 + 1, 6 + 20 + 1}));
  EXPECT_EQ(values(m->forward(x, 3.0, y)), (std::vector<double>{4, 8}));  // called directly: no hooks
  EXPECT_EQ(values(m.call(&ScaleAddImpl::half, x)), (std::vector<double>{5 + 1, 10 + 1}));
  EXPECT_EQ(events, (std::vector<std::string>{"pre 2", "post 20", "pre 1", "post 20"}));
  pre.remove();
  EXPECT_EQ(values(m(x, 3.0, y)), (std::vector<double>{3 + 1 + 1, 6 + 2 + 1}));
  post.remove();
  EXPECT_EQ(events.back(), "post 2");
  EXPECT_EQ(values(m(x, 3.0, y)), (std::vector<double>{4, 8}));
  EXPECT_EQ(events.size(), 5u);
}

TEST(ForwardHooks, RunInRegistrationOrderAndMayNotChangeTheCounts) {
  nn::Linear fc(nn::LinearOptions(2, 2).bias(false));
  std::string order;
  fc->register_forward_pre_hook([&](nn::Module&, std::vector<Tensor>&) { order += "a"; });
  fc->register_forward_pre_hook([&](nn::Module&, std::vector<Tensor>&) { order += "b"; });
  fc->register_forward_hook([&](nn::Module&, const std::vector<Tensor>&, std::vector<Tensor>&) { order += "c"; });
  fc->register_forward_hook([&](nn::Module&, const std::vector<Tensor>&, std::vector<Tensor>&) { order += "d"; });
  fc(ones({1, 2}));
  EXPECT_EQ(order, "abcd");
  RemovableHandle extra_input = fc->register_forward_pre_hook(
      [](nn::Module&, std::vector<Tensor>& inputs) { inputs.push_back(Tensor()); });
  EXPECT_TRUE(throws_error([&] { fc(ones({1, 2})); }, {"[forward_pre_hook]", "Linear", "from 1 to 2"}));
  extra_input.remove();
  fc->register_forward_hook(
      [](nn::Module&, const std::vector<Tensor>&, std::vector<Tensor>& outputs) { outputs.clear(); });
  EXPECT_TRUE(throws_error([&] { fc(ones({1, 2})); }, {"[forward_hook]", "Linear", "from 1 to 0"}));
}

TEST(ForwardHooks, SeeTheTensorsOfTupleResults) {
  nn::LSTM lstm(nn::LSTMOptions(2, 3));
  lstm->register_forward_hook([](nn::Module&, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
    EXPECT_EQ(inputs.size(), 1u);
    ASSERT_EQ(outputs.size(), 3u);  // output, (h, c)
    outputs[2] = zeros({1, 1, 3});
  });
  auto [output, state] = lstm(ones({4, 1, 2}));
  EXPECT_EQ(output.sizes(), std::vector<int64_t>({4, 1, 3}));
  EXPECT_EQ(std::get<0>(state).sizes(), std::vector<int64_t>({1, 1, 3}));
  EXPECT_EQ(values(std::get<1>(state)), std::vector<double>(3, 0.0));
}

TEST(ForwardHooks, SequentialRunsTheHooksOfItsChildren) {
  nn::Sequential seq(nn::Linear(2, 2), nn::ReLU());
  int calls = 0;
  seq->ptr<nn::ReLUImpl>(1)->register_forward_hook(
      [&](nn::Module&, const std::vector<Tensor>&, std::vector<Tensor>& outputs) {
        ++calls;
        outputs[0] = outputs[0] - 1;
      });
  Tensor x = uniform({3, 2}, 5, -1, 1, kFloat32);
  Tensor expected = seq->ptr<nn::ReLUImpl>(1)->forward(seq->ptr<nn::LinearImpl>(0)->forward(x)) - 1;
  EXPECT_TRUE(all_close(seq(x), values(expected)));
  EXPECT_TRUE(all_close(seq->forward(x), values(expected)));  // PyTorch's Sequential calls its children
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace ember::nntest
