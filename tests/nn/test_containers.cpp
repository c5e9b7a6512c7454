// ParameterList, ParameterDict, ModuleList and ModuleDict as libtorch's (construction, insertion,
// extension, update, names), AnyValue, AnyModule over forwards of any signature, Sequential
// chaining such modules, OrderedDict's braced lists and checks, the per-rank option aliases.
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <typeinfo>
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

  // update replaces the tensors of keys it holds; a key it does not hold is an error (as
  // libtorch's), and the keys before it are already replaced.
  OrderedDict<std::string, Tensor> changes = {{"a", full({1}, 9.0)}, {"c", full({1}, 5.0)}};
  dict->update(changes);
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(dict["a"].item<float>(), 9.0f);
  EXPECT_EQ(dict["c"].item<float>(), 5.0f);
  OrderedDict<std::string, Tensor> unknown = {{"b", full({2}, 7.0)}, {"d", full({1}, 4.0)}};
  EXPECT_TRUE(throws_error([&] { dict->update(unknown); }, {"Parameter 'd' is not defined"}));
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(dict["b"][1].item<float>(), 7.0f);
  dict->insert("d", full({1}, 4.0));

  EXPECT_EQ(dict->pop("c").item<float>(), 5.0f);
  dict->erase("d");
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(throws_error([&] { dict->pop("c"); }, {"Parameter 'c' is not defined"}));
  EXPECT_TRUE(throws_error([&] { dict->erase("c"); }, {"Key 'c' doesn't exist"}));
  dict->clear();
  EXPECT_TRUE(dict->empty());
  EXPECT_EQ(dict->size(), 0u);
}

// forward(int, double = 0.25) -> "<int>:<double>", with its default declared for AnyModule.
// The declaration sits under `protected:`, where libtorch's modules may put it too.
struct Describe : nn::Module {
  std::string forward(int count, const double scale = 0.25) { return std::to_string(count) + ":" + std::to_string(scale); }

 protected:
  EMBER_FORWARD_HAS_DEFAULT_ARGS({1, nn::AnyValue(0.25)})
};

struct AddOne : nn::Module {
  int forward(int x) { return x + 1; }
};

struct AddValue : nn::Module {
  explicit AddValue(int value_) : value(value_) {}
  int forward(int x) { return x + value; }
  int value;
};

// Takes its argument by non-const reference and writes through it.
struct Doubler : nn::Module {
  int forward(int& x) {
    x *= 2;
    return x;
  }
};

TEST(AnyValue, KeepsTheDecayedTypeAndChecksItOnTheWayOut) {
  nn::AnyValue number(5);
  ASSERT_NE(number.try_get<int>(), nullptr);
  EXPECT_NE(number.try_get<const int>(), nullptr);  // typeid ignores cv-qualifiers
  EXPECT_EQ(number.get<int>(), 5);
  EXPECT_EQ(number.try_get<long>(), nullptr);
  EXPECT_EQ(number.try_get<double>(), nullptr);
  EXPECT_EQ(number.type_info(), typeid(int));
  EXPECT_TRUE(throws_error([&] { number.get<float>(); }, {"[AnyValue]", "Attempted to cast AnyValue to float", "actual type is int"}));

  nn::AnyValue literal("abc");  // held as a const char*
  EXPECT_EQ(literal.type_info(), typeid(const char*));
  EXPECT_EQ(std::string(literal.get<const char*>()), "abc");
  const std::string text = "xyz";
  nn::AnyValue copied(text);  // const std::string& is held as a std::string
  EXPECT_EQ(copied.get<std::string>(), "xyz");

  nn::AnyValue copy = copied;  // copies hold their own value
  *copy.try_get<std::string>() = "changed";
  EXPECT_EQ(copied.get<std::string>(), "xyz");
  nn::AnyValue moved(std::move(copy));  // not wrapped again: still a std::string
  EXPECT_EQ(moved.get<std::string>(), "changed");
}

TEST(AnyModule, CallsForwardsOfAnySignatureAndChecksTheArguments) {
  nn::AnyModule add(AddOne{});
  EXPECT_EQ(add.forward<int>(41), 42);
  EXPECT_EQ(add.any_forward(1).get<int>(), 2);
  EXPECT_EQ(add.type_info(), typeid(AddOne));
  EXPECT_TRUE(throws_error([&] { add.forward<int>(1.0); },
                           {"[AnyModule]", "Expected argument #0 to be of type int", "received value of type double"}));
  EXPECT_TRUE(throws_error([&] { add.forward<int>(); }, {"[AnyModule]", "AddOne's forward() method expects 1 argument(s), but received 0. If ",
                                                         "AddOne's forward() method has default arguments",
                                                         "`EMBER_FORWARD_HAS_DEFAULT_ARGS` macro."}));
  EXPECT_TRUE(throws_error([&] { add.forward<int>(1, 2); }, {"expects 1 argument(s), but received 2."}));
  // forward(x) without a type wants a Tensor back.
  EXPECT_TRUE(throws_error([&] { add.forward(1); }, {"Attempted to cast AnyValue to ember::Tensor, but its actual type is int"}));

  // Defaults fill the arguments left out; more than the forward takes is an error.
  nn::AnyModule describe(Describe{});
  EXPECT_EQ(describe.forward<std::string>(3), "3:0.250000");
  EXPECT_EQ(describe.forward<std::string>(3, 2.0), "3:2.000000");
  EXPECT_TRUE(throws_error([&] { describe.forward<std::string>(); },
                           {"expects at least 1 argument(s) and at most 2 argument(s), but received 0."}));
  EXPECT_TRUE(throws_error([&] { describe.forward<std::string>(1, 2.0, 3); }, {"received 3"}));

  // A non-const reference parameter sees the AnyValue's own int, not a copy of the caller's.
  nn::AnyModule doubler(Doubler{});
  int x = 5;
  EXPECT_EQ(doubler.forward<int>(x), 10);
  EXPECT_EQ(x, 5);
}

TEST(AnyModule, GivesTheModuleBackOnlyAsItsOwnClass) {
  nn::AnyModule any(std::make_shared<AddValue>(7));
  EXPECT_EQ(any.get<AddValue>().value, 7);
  EXPECT_EQ(any.forward<int>(1), 8);
  EXPECT_EQ(any.ptr<AddValue>()->value, 7);
  EXPECT_EQ(any.ptr().get(), any.ptr<AddValue>().get());
  EXPECT_TRUE(throws_error([&] { any.get<AddOne>(); }, {"[AnyModule]", "Attempted to cast module of type", "AddValue",
                                                         "to type", "AddOne"}));
  EXPECT_TRUE(throws_error([&] { any.ptr<nn::Module>(); }, {"Attempted to cast module"}));

  nn::AnyModule linear{nn::Linear(2, 3)};
  nn::Linear holder = linear.get<nn::Linear>();  // a new holder of the same module
  EXPECT_EQ(holder.get(), &linear.get<nn::LinearImpl>());
  nn::AnyModule copy = linear;  // copies share the module
  EXPECT_EQ(copy.ptr().get(), linear.ptr().get());

  nn::AnyModule empty;
  EXPECT_TRUE(empty.is_empty());
  EXPECT_TRUE(throws_error([&] { empty.get<AddValue>(); }, {"Cannot call get() on an empty AnyModule"}));
  EXPECT_TRUE(throws_error([&] { empty.ptr(); }, {"Cannot call ptr() on an empty AnyModule"}));
  EXPECT_TRUE(throws_error([&] { empty.type_info(); }, {"Cannot call type_info() on an empty AnyModule"}));
  EXPECT_TRUE(throws_error([&] { empty.forward(ones({1})); }, {"Cannot call forward() on an empty AnyModule"}));
  empty = std::make_shared<AddOne>();
  EXPECT_EQ(empty.forward<int>(1), 2);
}

TEST(Sequential, ChainsForwardsOfAnySignature) {
  // 1 -> 2 -> 3 -> "3:0.250000" (Describe's second argument from its default).
  nn::Sequential chain(AddOne{}, std::make_shared<AddOne>(), Describe{});
  EXPECT_EQ(chain->forward<std::string>(1), "3:0.250000");
  EXPECT_TRUE(throws_error([&] { chain->forward<int>(1); },
                           {"[Sequential]", "The type of the return value is std::", "you asked for type int"}));
  nn::Sequential empty;
  EXPECT_TRUE(throws_error([&] { empty->forward(ones({1})); }, {"Cannot call forward() on an empty Sequential"}));

  // A Sequential inside a Sequential is called as a Tensor -> Tensor module.
  nn::Sequential outer(nn::Functional([](Tensor t) { return t * 3; }),
                       nn::Sequential(nn::Functional([](Tensor t) { return t + 1; })));
  EXPECT_EQ(values(outer->forward(testutil::make({1.0, 2.0}, {2}, kFloat64))), (std::vector<double>{4.0, 7.0}));

  // Modules whose forwards have default arguments take one input; LSTM returns its tuple.
  nn::Sequential recurrent(nn::LSTM(2, 3));
  auto [output, state] = recurrent->forward<std::tuple<Tensor, std::tuple<Tensor, Tensor>>>(ones({4, 1, 2}));
  EXPECT_EQ(output.sizes().vec(), (std::vector<int64_t>{4, 1, 3}));
  EXPECT_EQ(std::get<1>(state).sizes().vec(), (std::vector<int64_t>{1, 1, 3}));
}

TEST(Sequential, NamesPushesExtendsAndIndexes) {
  nn::Sequential named(nn::modules_ordered_dict({{"first", AddOne{}}, {"second", std::make_shared<AddOne>()}}));
  named->push_back("third", nn::Linear(1, 1));
  named->push_back(Describe{});
  EXPECT_EQ(named->named_children().keys(), (std::vector<std::string>{"first", "second", "third", "3"}));
  EXPECT_EQ(named->size(), 4u);
  EXPECT_NE(named->ptr<AddOne>(1), nullptr);
  EXPECT_EQ(named[2].get(), named->ptr<nn::LinearImpl>(2).get());
  EXPECT_TRUE(throws_error([&] { named->ptr<AddOne>(2); }, {"Attempted to cast module"}));
  EXPECT_TRUE(throws_error([&] { named->at<AddOne>(4); }, {"[Sequential]", "Index out of range"}));

  nn::Sequential more(AddOne{});
  more->extend(*named);  // shares the modules, under new positional names
  more->extend(std::vector<std::shared_ptr<AddOne>>{std::make_shared<AddOne>()});
  EXPECT_EQ(more->size(), 6u);
  EXPECT_EQ(more->ptr(1).get(), named->ptr(0).get());
  EXPECT_EQ(more->named_children().keys(), (std::vector<std::string>{"0", "1", "2", "3", "4", "5"}));
  size_t count = 0;
  for (const nn::AnyModule& module : *more) count += module.is_empty() ? 0 : 1;
  EXPECT_EQ(count, 6u);
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
