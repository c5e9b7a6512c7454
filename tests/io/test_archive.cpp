// serialize::OutputArchive / InputArchive: tensors, values and nested archives round-trip
// through files, streams, buffers and functions; module files read as archives; missing keys
// name what is missing; make_tempfile.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/testing.h"
#include "test_support.h"
#include "ember/ember.h"

namespace ember {
namespace {

using testutil::throws_error;

TEST(Archive, RoundTripsTensorsValuesAndNestedArchives) {
  serialize::OutputArchive inner;
  inner.write("weight", ember::tensor({1.5, -2.0}));
  serialize::OutputArchive out;
  out.write("index", ember::tensor(int64_t{7}), /*is_buffer=*/true);
  out.write("count", IValue(int64_t{3}));
  out.write("rate", IValue(0.25));
  out.write("name", IValue(std::string("chunked")));
  out.write("layer", inner);
  std::stringstream stream;
  out.save_to(stream);

  serialize::InputArchive in;
  in.load_from(stream);
  EXPECT_EQ(in.keys(), (std::vector<std::string>{"index", "layer", "count", "name", "rate"}));
  Tensor index;
  in.read("index", index, /*is_buffer=*/true);
  EXPECT_EQ(index.item<int64_t>(), 7);
  IValue value;
  in.read("count", value);
  EXPECT_EQ(value.toInt(), 3);
  in.read("rate", value);
  EXPECT_EQ(value.toDouble(), 0.25);
  in.read("name", value);
  EXPECT_EQ(value.toStringRef(), "chunked");
  serialize::InputArchive layer;
  in.read("layer", layer);
  Tensor weight = ember::zeros({2}, kFloat64);
  layer.read("weight", weight);  // a defined tensor takes the read data
  EXPECT_TRUE(testutil::all_close(weight, {1.5, -2.0}, {0, 0}));
  EXPECT_FALSE(in.try_read("missing", index));
  EXPECT_FALSE(in.try_read("index", layer));  // a tensor, not a nested archive
  EXPECT_TRUE(throws_error([&] { layer.read("bias", index); }, {"No such serialized tensor 'layer.bias'"}));
  EXPECT_TRUE(throws_error([&] { in.read("other", layer); }, {"No such serialized submodule: 'other'"}));
  EXPECT_TRUE(throws_error([&] { out.write("index", ember::tensor(1.0)); }, {"'index' was already written"}));
}

TEST(Archive, ReadsThroughFunctionsAndModuleFilesAsArchives) {
  nn::Sequential model(nn::Linear(2, 3), nn::Functional(relu), nn::Linear(3, 1));
  std::string bytes;
  ember::save(model, [&](const void* data, size_t n) {
    bytes.append(static_cast<const char*>(data), n);
    return n;
  });
  serialize::InputArchive in;
  in.load_from([&](uint64_t pos, void* buf, size_t n) -> size_t {
    const size_t count = std::min<size_t>(n, bytes.size() - pos);
    std::memcpy(buf, bytes.data() + pos, count);
    return count;
  }, [&] { return bytes.size(); });
  serialize::InputArchive first, functional;
  ASSERT_TRUE(in.try_read("0", first));
  EXPECT_FALSE(in.try_read("1", functional));  // no parameters, nothing stored
  Tensor weight;
  first.read("weight", weight);
  EXPECT_TRUE(weight.equal(model[0]->named_parameters()["weight"]));

  Tensor loaded;
  Tensor x = ember::tensor({1.0f, 2.0f});
  std::string tensor_bytes;
  ember::save(x, [&](const void* data, size_t n) {
    tensor_bytes.append(static_cast<const char*>(data), n);
    return n;
  });
  ember::load(loaded, [&](uint64_t pos, void* buf, size_t n) -> size_t {
    const size_t count = std::min<size_t>(n, tensor_bytes.size() - pos);
    std::memcpy(buf, tensor_bytes.data() + pos, count);
    return count;
  }, [&] { return tensor_bytes.size(); });
  EXPECT_TRUE(loaded.equal(x));
}

struct Leaf : nn::Module {
  explicit Leaf(const std::string& name) { register_buffer(name, ember::ones({2})); }
};
struct Branch : nn::Module {
  Branch(const std::string& branch, const std::string& leaf) { register_module(branch, std::make_shared<Leaf>(leaf)); }
};

TEST(Archive, ModuleLoadNamesTheMissingTensorOrSubmoduleAndRereadsTheStream) {
  std::stringstream stream;
  ember::save(std::make_shared<Branch>("b", "c"), stream);
  EXPECT_TRUE(throws_error([&] { ember::load(std::make_shared<Branch>("b", "x"), stream); },
                           {"No such serialized tensor 'b.x'"}));
  EXPECT_TRUE(throws_error([&] { ember::load(std::make_shared<Branch>("x", "c"), stream); },
                           {"No such serialized submodule: 'x'"}));
  auto same = std::make_shared<Branch>("b", "c");
  ember::load(same, stream);  // the stream is read again from its beginning
  EXPECT_EQ(same->named_buffers()["b.c"].sum().item<double>(), 2.0);
}

TEST(TempFile, IsCreatedEmptyAndRemovedWithItsObject) {
  std::string name;
  {
    TempFile file = make_tempfile("ember-archive-test-");
    name = file.name;
    std::ifstream in(name);
    EXPECT_TRUE(in.good());
    EXPECT_EQ(in.peek(), std::ifstream::traits_type::eof());
  }
  std::ifstream gone(name);
  EXPECT_FALSE(gone.good());
}

}  // namespace
}  // namespace ember
