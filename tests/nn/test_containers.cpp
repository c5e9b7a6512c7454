// ParameterList, ParameterDict, ModuleList and ModuleDict as libtorch's (construction, insertion,
// extension, update, names), OrderedDict's braced lists and checks, the per-rank option aliases.
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "nn_testing.h"

namespace ember::nntest {
namespace {

struct Valued : nn::Module {
  explicit Valued(int value_) : value(value_) {}
  int value;
};

std::vector<std::string> parameter_names(const nn::Module& module) { return module.named_parameters().keys(); }

TEST(ParameterList, AppendsUnderPositionsAndKeepsRequiresGrad) {
  Tensor a = ones({1, 2}, requires_grad(true));
  Tensor b = zeros({3});
  nn::ParameterList list(a, b);
  EXPECT_EQ(list->size(), 2u);
  EXPECT_TRUE(list[0].is_same(a));
  EXPECT_TRUE(list->at(1).is_same(b));
  EXPECT_TRUE(list[0].requires_grad());
  EXPECT_FALSE(list[1].requires_grad());

  nn::ParameterList other(full({2}, 5.0));
  list->extend(*other);
  list->extend(std::vector<Tensor>{full({1}, 7.0)});
  *list += std::vector<Tensor>{full({1}, 8.0)};
  EXPECT_EQ(list->size(), 5u);
  EXPECT_EQ(parameter_names(*list), (std::vector<std::string>{"0", "1", "2", "3", "4"}));
  EXPECT_EQ(list[3].item<float>(), 7.0f);
  EXPECT_EQ(list[4].item<float>(), 8.0f);
  EXPECT_TRUE(throws_error([&] { list->at(5); }, {"[ParameterList]", "Index out of range", "5"}));

  nn::ParameterList empty;
  EXPECT_TRUE(empty->is_empty());
  int seen = 0;
  for (const auto& item : *list) EXPECT_EQ(item.key(), std::to_string(seen++));
  EXPECT_EQ(seen, 5);
}

TEST(ParameterDict, InsertsUpdatesAndRemovesByKey) {
  OrderedDict<std::string, Tensor> tensors = {{"a", ones({1})}, {"b", zeros({2}, requires_grad(true))}};
  nn::ParameterDict dict(tensors);
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(dict["b"].requires_grad());
  EXPECT_FALSE(dict->get("a").requires_grad());
  dict->insert("c", full({1}, 3.0));
  EXPECT_TRUE(throws_error([&] { dict->insert("c", ones({1})); }, {"'c'", "already"}));
  EXPECT_TRUE(dict->contains("c"));
  EXPECT_EQ(parameter_names(*dict), (std::vector<std::string>{"a", "b", "c"}));

  // update: present keys replaced in place, new ones appended.
  OrderedDict<std::string, Tensor> changes = {{"a", full({1}, 9.0)}, {"d", full({1}, 4.0)}};
  dict->update(changes);
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(dict["a"].item<float>(), 9.0f);

  EXPECT_EQ(dict->pop("c").item<float>(), 3.0f);
  dict->erase("d");
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(throws_error([&] { dict->pop("c"); }, {"'c'"}));
  dict->clear();
  EXPECT_TRUE(dict->empty());
  EXPECT_EQ(dict->size(), 0u);
}

TEST(ModuleList, TakesModulesByValueInsertsAndExtends) {
  nn::ModuleList list(Valued(1), std::make_shared<Valued>(2));
  list->push_back(Valued(3));
  EXPECT_EQ(list->size(), 3u);
  // [1, 2, 3] -> insert 4 at 0 -> [4, 1, 2, 3] -> insert 5 at 2 -> [4, 1, 5, 2, 3] -> append 6.
  list->insert(0, Valued(4));
  list->insert(2, std::make_shared<Valued>(5));
  list->insert(5, Valued(6));
  std::vector<int> values;
  for (const auto& module : *list) values.push_back(module->as<Valued>()->value);
  EXPECT_EQ(values, (std::vector<int>{4, 1, 5, 2, 3, 6}));
  // Children are named by their new positions.
  std::vector<int> by_name(6);
  for (const auto& child : list->named_children()) by_name[std::stoul(child.key())] = child.value()->as<Valued>()->value;
  EXPECT_EQ(by_name, values);
  EXPECT_TRUE(throws_error([&] { list->insert(7, Valued(0)); }, {"[ModuleList]", "Index out of range"}));
  EXPECT_TRUE(throws_error([&] { list->ptr(6); }, {"[ModuleList]", "Index out of range"}));

  nn::ModuleList other(Valued(7));
  list->extend(*other);
  list->extend(std::vector<std::shared_ptr<Valued>>{std::make_shared<Valued>(8)});
  EXPECT_EQ(list->size(), 8u);
  EXPECT_EQ(list->at<Valued>(6).value, 7);
  EXPECT_EQ(list[7]->as<Valued>()->value, 8);
  EXPECT_EQ(other->size(), 1u);
}

TEST(ModuleDict, FromOrderedDictUpdatesInPlace) {
  OrderedDict<std::string, std::shared_ptr<nn::Module>> modules = {{"x", std::make_shared<Valued>(1)},
                                                                   {"y", std::make_shared<Valued>(2)}};
  nn::ModuleDict dict(modules);
  EXPECT_FALSE(dict->empty());
  // A key present keeps its position; a new one goes last; pairs, OrderedDicts and ModuleDicts.
  dict->update(std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>>{{"x", std::make_shared<Valued>(3)}});
  dict->update(OrderedDict<std::string, std::shared_ptr<nn::Module>>{{"z", std::make_shared<Valued>(4)}});
  nn::ModuleDict more(OrderedDict<std::string, std::shared_ptr<nn::Module>>{{"w", std::make_shared<Valued>(5)}});
  dict->update(*more);
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"x", "y", "z", "w"}));
  EXPECT_EQ(dict->at<Valued>("x").value, 3);
  EXPECT_EQ(dict["w"]->as<Valued>()->value, 5);
  EXPECT_TRUE(throws_error([&] { dict->pop("v"); }, {"[ModuleDict]", "Key 'v' is not defined"}));
  dict->clear();
  EXPECT_TRUE(dict->empty());
}

TEST(OrderedDict, BracedListsAndChecks) {
  OrderedDict<std::string, int> dict = {{"a", 1}, {"b", 2}};
  EXPECT_EQ(dict.keys(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(dict["b"], 2);
  EXPECT_EQ(dict.front().key(), "a");
  EXPECT_EQ(dict.back().value(), 2);
  EXPECT_EQ(dict.key_description(), "Key");
  EXPECT_EQ(dict.pairs(), (std::vector<std::pair<std::string, int>>{{"a", 1}, {"b", 2}}));
  EXPECT_TRUE(throws_error([&] { dict["c"]; }, {"Key 'c' is not defined"}));
  EXPECT_TRUE(throws_error([&] { dict[size_t{2}]; }, {"Index 2 is out of bounds"}));
  EXPECT_TRUE(throws_error([] { OrderedDict<std::string, int>{{"a", 1}, {"a", 2}}; }, {"'a' already defined"}));
  // update inserts, and a key already present is an error, as in libtorch.
  dict.update(OrderedDict<std::string, int>{{"c", 3}});
  EXPECT_EQ(dict.size(), 3u);
  EXPECT_TRUE(throws_error([&] { dict.update(OrderedDict<std::string, int>{{"a", 5}}); }, {"'a' already defined"}));
  OrderedDict<std::string, int> copy = dict;
  EXPECT_TRUE(copy == dict);
  copy.erase("b");
  EXPECT_FALSE(copy == dict);
  EXPECT_EQ(copy.keys(), (std::vector<std::string>{"a", "c"}));

  OrderedDict<std::string, int> empty;
  EXPECT_TRUE(throws_error([&] { empty.front(); }, {"Called front() on an empty OrderedDict"}));
  EXPECT_TRUE(throws_error([&] { empty.back(); }, {"Called back() on an empty OrderedDict"}));
}

TEST(Options, PerRankAliases) {
  static_assert(std::is_same_v<nn::BatchNorm1dOptions, nn::BatchNormOptions>);
  static_assert(std::is_same_v<nn::BatchNorm2dOptions, nn::BatchNormOptions>);
  static_assert(std::is_same_v<nn::BatchNorm3dOptions, nn::BatchNormOptions>);
  static_assert(std::is_same_v<nn::InstanceNorm1dOptions, nn::InstanceNormOptions>);
  static_assert(std::is_same_v<nn::InstanceNorm2dOptions, nn::InstanceNormOptions>);
  static_assert(std::is_same_v<nn::InstanceNorm3dOptions, nn::InstanceNormOptions>);
  nn::BatchNorm2d norm(nn::BatchNorm2dOptions(3).eps(1e-3).affine(false));
  EXPECT_EQ(norm->options.eps(), 1e-3);
  EXPECT_TRUE(norm->named_parameters().is_empty());
}

}  // namespace
}  // namespace ember::nntest
