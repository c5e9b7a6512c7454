// safetensors: one test per validation rule on hand-built byte images, round trips of
// every dtype, the reference writer's exact bytes, zero-copy views and atomic saves.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/storage.h"

namespace ember::io {
namespace {

using Bytes = std::vector<unsigned char>;

Bytes le64(uint64_t n) {
  Bytes out(8);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(n >> (8 * i));
  return out;
}

// A file image: 8-byte length, header text, `data_len` data bytes (0, 1, 2, ...).
Bytes image(const std::string& header, size_t data_len, std::optional<uint64_t> claimed_len = std::nullopt) {
  Bytes out = le64(claimed_len.value_or(header.size()));
  out.insert(out.end(), header.begin(), header.end());
  for (size_t i = 0; i < data_len; ++i) out.push_back(static_cast<unsigned char>(i));
  return out;
}

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape, uint64_t begin,
                  uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

// Expects parse_safetensors to reject `bytes` with a message holding every `parts` item.
void expect_rejected(const Bytes& bytes, const std::vector<std::string>& parts) {
  try {
    parse_safetensors(bytes.data(), bytes.size(), "bad.safetensors");
    FAIL() << "accepted an invalid file; expected: " << parts.front();
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("bad.safetensors"), std::string::npos) << message;
    for (const auto& part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

Header parse(const Bytes& bytes) { return parse_safetensors(bytes.data(), bytes.size(), "ok.safetensors"); }

class TempDir : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    return ::testing::TempDir() + "/ember_io_" + std::to_string(::getpid()) + "_" + test->name() + "_" + name;
  }
  static void write(const std::string& path, const Bytes& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  static Bytes read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
  }
};

// ---- validation rules ----------------------------------------------------------------

TEST(SafetensorsValidation, FewerThanEightBytes) {
  expect_rejected(Bytes{2, 0, 0, 0, 0, 0, 0}, {"7 bytes", "fewer than"});
  expect_rejected(Bytes{}, {"0 bytes"});
}

TEST(SafetensorsValidation, HeaderLengthAboveLimit) {
  expect_rejected(image("{}", 0, 100'000'001), {"header length 100000001", "exceeds the limit"});
}

TEST(SafetensorsValidation, HeaderLengthMaxU64) {
  expect_rejected(image("{}", 0, std::numeric_limits<uint64_t>::max()), {"header length 18446744073709551615"});
}

TEST(SafetensorsValidation, HeaderLengthPastEndOfFile) {
  expect_rejected(image("{}", 0, 3), {"header length 3", "past the end"});
}

TEST(SafetensorsValidation, HeaderMustStartWithBrace) {
  expect_rejected(image(" {}", 0), {"must start with '{'"});
  expect_rejected(image("\xEF\xBB\xBF{}", 0), {"must start with '{'"});  // a UTF-8 byte order mark
  expect_rejected(image("", 0), {"must start with '{'"});
}

TEST(SafetensorsValidation, HeaderNotUtf8) {
  expect_rejected(image("{\"a\xff\":{}}", 0), {"not valid JSON", "UTF-8"});
  expect_rejected(image("{\"\xc0\xaf\":{}}", 0), {"UTF-8"});            // overlong encoding of '/'
  expect_rejected(image("{\"\xed\xa0\x80\":{}}", 0), {"UTF-8"});        // a UTF-16 surrogate
  expect_rejected(image("{\"__metadata__\":{\"k\":\"\xfe\"}}", 0), {"UTF-8"});
}

TEST(SafetensorsValidation, InvalidJson) {
  expect_rejected(image("{\"a\":", 0), {"not valid JSON"});
  expect_rejected(image("{}x", 0), {"not valid JSON"});
  expect_rejected(image(std::string("{}\0", 3), 0), {"not valid JSON", "NUL byte"});  // NUL is not padding
  expect_rejected(image(std::string("{}\0x{", 5), 0), {"NUL byte at header offset 2"});
}

TEST(SafetensorsValidation, WrongTypes) {
  expect_rejected(image("{\"w\":[1]}", 0), {"tensor 'w'", "must be an object, got an array"});
  expect_rejected(image("{\"w\":{\"dtype\":4,\"shape\":[],\"data_offsets\":[0,4]}}", 4),
                  {"tensor 'w'", "'dtype' must be a string"});
  expect_rejected(image("{\"w\":{\"dtype\":\"F32\",\"shape\":\"1\",\"data_offsets\":[0,4]}}", 4),
                  {"'shape' must be an array, got a string"});
  expect_rejected(image("{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4),
                  {"'shape' must hold non-negative integers, got a negative integer"});
  expect_rejected(image("{\"w\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4),
                  {"non-integer number"});
  expect_rejected(image("{\"w\":{\"dtype\":\"F32\",\"shape\":[[1]],\"data_offsets\":[0,4]}}", 4),
                  {"got an array"});
  expect_rejected(image("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,4]}}", 4),
                  {"exactly 2 numbers, got 3"});
  expect_rejected(image("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4), {"tensor 'w'", "missing field 'data_offsets'"});
  expect_rejected(image("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4), {"missing field 'dtype'"});
  // A dimension beyond uint64 parses as a float in JSON, and one beyond int64 is refused.
  expect_rejected(image("{\"w\":{\"dtype\":\"F32\",\"shape\":[18446744073709551616],\"data_offsets\":[0,4]}}", 4),
                  {"non-integer number"});
  expect_rejected(image("{\"w\":{\"dtype\":\"F32\",\"shape\":[9223372036854775808,0],\"data_offsets\":[0,0]}}", 0),
                  {"exceeds int64"});
}

TEST(SafetensorsValidation, UnknownDtype) {
  expect_rejected(image("{" + entry("w", "F128", "[1]", 0, 16) + "}", 16), {"tensor 'w'", "unknown dtype 'F128'"});
  expect_rejected(image("{" + entry("w", "f32", "[1]", 0, 4) + "}", 4), {"unknown dtype 'f32'"});
}

TEST(SafetensorsValidation, NonStringMetadataValue) {
  expect_rejected(image("{\"__metadata__\":{\"step\":10}}", 0),
                  {"__metadata__", "key 'step' must be a string, got a number"});
  expect_rejected(image("{\"__metadata__\":{\"a\":{\"b\":\"c\"}}}", 0), {"key 'a' must be a string, got an object"});
  expect_rejected(image("{\"__metadata__\":{\"a\":null}}", 0), {"got null"});
}

TEST(SafetensorsValidation, TenTensorsClaimingTheSameBytes) {
  std::string header = "{";
  for (int i = 0; i < 10; ++i) header += (i ? "," : "") + entry("t" + std::to_string(i), "F32", "[1]", 0, 4);
  header += "}";
  expect_rejected(image(header, 4), {"data_offsets [0, 4] overlap", "ends at 4"});
}

TEST(SafetensorsValidation, GapBetweenTensors) {
  expect_rejected(image("{" + entry("a", "F32", "[1]", 0, 4) + "," + entry("b", "F32", "[1]", 8, 12) + "}", 12),
                  {"tensor 'b'", "leave a gap", "'a' ends at 4"});
  expect_rejected(image("{" + entry("a", "F32", "[1]", 4, 8) + "}", 8), {"tensor 'a'", "gap", "starts at 0"});
}

TEST(SafetensorsValidation, OffsetsEndBeforeBegin) {
  expect_rejected(image("{" + entry("a", "F32", "[0]", 4, 0) + "}", 4), {"tensor 'a'", "end before they begin"});
}

TEST(SafetensorsValidation, ByteSizeDiffersFromShape) {
  expect_rejected(image("{" + entry("a", "F32", "[2,3]", 0, 20) + "}", 20),
                  {"tensor 'a'", "span 20 bytes", "needs 24"});
  expect_rejected(image("{" + entry("a", "F16", "[]", 0, 4) + "}", 4), {"span 4 bytes", "needs 2"});
}

TEST(SafetensorsValidation, ShapeProductOverflows) {
  expect_rejected(image("{" + entry("a", "U8", "[4294967296,4294967296,0]", 0, 0) + "}", 0),
                  {"tensor 'a'", "overflows when multiplied out"});
  expect_rejected(image("{" + entry("a", "F64", "[4611686018427387904]", 0, 0) + "}", 0),
                  {"tensor 'a'", "byte size", "overflows"});
}

TEST(SafetensorsValidation, TrailingBytes) {
  expect_rejected(image("{" + entry("a", "F32", "[1]", 0, 4) + "}", 7), {"3 bytes left over", "tensor 'a'"});
  expect_rejected(image("{}", 1), {"1 bytes left over"});
}

TEST(SafetensorsValidation, TruncatedByTwoBytes) {
  Bytes bytes = image("{" + entry("a", "F32", "[2]", 0, 8) + "}", 8);
  bytes.resize(bytes.size() - 2);
  expect_rejected(bytes, {"tensor 'a'", "needs data up to byte 8", "only 6 bytes", "truncated"});
}

TEST(SafetensorsValidation, DuplicateNames) {
  expect_rejected(image("{" + entry("a", "F32", "[1]", 0, 4) + "," + entry("a", "F32", "[1]", 4, 8) + "}", 8),
                  {"tensor 'a'", "duplicate tensor name"});
  expect_rejected(image("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4),
                  {"duplicate field 'dtype'"});
  expect_rejected(image("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0), {"duplicate metadata key 'k'"});
  expect_rejected(image("{\"__metadata__\":{},\"__metadata__\":{}}", 0), {"duplicate"});
}

TEST(SafetensorsValidation, ValidEdgeCases) {
  EXPECT_TRUE(parse(image("{}", 0)).tensors.empty());
  EXPECT_TRUE(parse(image("{}      ", 0)).tensors.empty());  // space padding
  // Scalars, zero-size tensors sharing an offset, metadata, and an unknown field (skipped,
  // as the reference does) in any order.
  const std::string header = "{\"__metadata__\":{\"format\":\"pt\"}," + entry("z2", "I64", "[3,0]", 4, 4) + "," +
                             entry("s", "F32", "[]", 0, 4) + "," + entry("z1", "F32", "[0]", 4, 4) + "," +
                             "\"u\":{\"extra\":{\"x\":[1,{\"y\":null}]},\"dtype\":\"U8\",\"shape\":[2],"
                             "\"data_offsets\":[4,6],\"note\":\"hi\"}}";
  Header h = parse(image(header, 6));
  ASSERT_EQ(h.tensors.size(), 4u);
  EXPECT_EQ(h.tensors[0].name, "s");
  EXPECT_EQ(h.tensors[1].name, "z2");  // ties keep header order
  EXPECT_EQ(h.tensors[2].name, "z1");
  EXPECT_EQ(h.tensors[3].name, "u");
  EXPECT_EQ(h.tensors[0].shape, std::vector<int64_t>{});
  EXPECT_EQ(h.tensors[1].shape, (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(h.metadata.at("format"), "pt");
  EXPECT_EQ(h.data_start, 8 + header.size());
}

TEST(SafetensorsValidation, AllFormatDtypesParse) {
  const std::vector<std::pair<std::string, size_t>> dtypes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"I16", 2}, {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8}, {"U64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  for (const auto& [name, size] : dtypes) {
    Header h = parse(image("{" + entry("t", name, "[3]", 0, 3 * size) + "}", 3 * size));
    EXPECT_STREQ(file_dtype_name(h.tensors[0].dtype), name.c_str());
    EXPECT_EQ(file_dtype_size(h.tensors[0].dtype), size);
  }
}

// ---- the reference writer's bytes (from huggingface/safetensors' own tests) ------------

TEST_F(TempDir, MatchesReferenceWriterBytes) {
  std::vector<float> values = {0, 1, 2, 3, 4, 5};
  const std::string file = path("attn.safetensors");
  save_safetensors(file, TensorList{{"attn.0", from_blob(values.data(), {1, 2, 3})}});
  const Bytes expected = {64,  0,   0,   0,   0,   0,   0,   0,   123, 34,  97,  116, 116, 110, 46,  48,  34,  58,
                          123, 34,  100, 116, 121, 112, 101, 34,  58,  34,  70,  51,  50,  34,  44,  34,  115, 104,
                          97,  112, 101, 34,  58,  91,  49,  44,  50,  44,  51,  93,  44,  34,  100, 97,  116, 97,
                          95,  111, 102, 102, 115, 101, 116, 115, 34,  58,  91,  48,  44,  50,  52,  93,  125, 125,
                          0,   0,   0,   0,   0,   0,   128, 63,  0,   0,   0,   64,  0,   0,   64,  64,  0,   0,
                          128, 64,  0,   0,   160, 64};
  EXPECT_EQ(read(file), expected);

  save_safetensors(file, TensorList{}, Metadata{{"framework", "pt"}});
  const std::string header = "{\"__metadata__\":{\"framework\":\"pt\"}}     ";
  EXPECT_EQ(read(file), image(header, 0));
}

TEST_F(TempDir, LayoutSortsByDtypeAlignmentThenName) {
  const std::string file = path("order.safetensors");
  TensorList tensors = {{"c", ones({2}, kUInt8)},  {"a", ones({2}, kFloat32)}, {"b2", ones({2}, kInt64)},
                        {"b1", ones({2}, kInt64)}, {"d", ones({2}, kFloat64)}, {"e", ones({2}, kBFloat16)},
                        {"f", ones({2}, kFloat16)}, {"g", ones({2}, kBool)},   {"h", ones({2}, kInt8)},
                        {"i", ones({2}, kInt32)}};
  save_safetensors(file, tensors);
  // Reference Dtype order ascending: BOOL U8 I8 .. F16 BF16 I32 .. F32 F64 I64; written descending.
  EXPECT_EQ(SafeOpen(file).keys(),
            (std::vector<std::string>{"b1", "b2", "d", "a", "i", "e", "f", "h", "c", "g"}));
  const Bytes bytes = read(file);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  EXPECT_EQ(header_len % 8, 0u);
  EXPECT_EQ(bytes[8 + header_len - 1] == ' ' || bytes[8 + header_len - 1] == '}', true);
}

// ---- round trips ---------------------------------------------------------------------

// The logical row-major bytes of `t`, walked through its strides by hand.
Bytes logical_bytes(const Tensor& t) {
  const size_t item = t.element_size();
  Bytes out;
  std::vector<int64_t> index(static_cast<size_t>(t.dim()), 0);
  const auto* base = static_cast<const unsigned char*>(t.storage().data()) + t.storage_offset() * item;
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t offset = 0;
    for (int64_t d = 0; d < t.dim(); ++d) offset += index[d] * t.stride(d);
    out.insert(out.end(), base + offset * item, base + (offset + 1) * item);
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (++index[d] < t.size(d)) break;
      index[d] = 0;
    }
  }
  return out;
}

// A tensor of random bytes (0/1 for bool) that owns its memory.
Tensor random_tensor(std::vector<int64_t> shape, ScalarType dtype, std::mt19937& rng) {
  Tensor t = empty(shape, dtype);
  auto* p = static_cast<unsigned char*>(t.data_ptr());
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<unsigned char>(dtype == kBool ? rng() % 2 : rng());
  return t;
}

TEST_F(TempDir, RoundTripEveryDtypeScalarAndEmpty) {
  std::mt19937 rng(7);
  const std::vector<ScalarType> dtypes = {kBool,     kUInt8,    kInt8,    kInt32,  kInt64,
                                          kFloat16,  kBFloat16, kFloat32, kFloat64};
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {3, 0, 2}, {5}, {3, 7}, {2, 3, 5}};
  TensorList tensors;
  for (ScalarType dtype : dtypes) {
    for (size_t s = 0; s < shapes.size(); ++s) {
      tensors.emplace_back(std::string(dtype_name(dtype)) + "." + std::to_string(s), random_tensor(shapes[s], dtype, rng));
    }
  }
  const std::string file = path("all.safetensors");
  save_safetensors(file, tensors, {{"step", "12"}, {"note", "héllo"}});
  LoadedTensors loaded = load_safetensors(file);
  EXPECT_EQ(loaded.metadata, (Metadata{{"step", "12"}, {"note", "héllo"}}));
  ASSERT_EQ(loaded.tensors.size(), tensors.size());
  for (const auto& [name, original] : tensors) {
    const Tensor& back = loaded.at(name);
    EXPECT_EQ(back.scalar_type(), original.scalar_type()) << name;
    EXPECT_EQ(back.sizes(), original.sizes()) << name;
    EXPECT_EQ(logical_bytes(back), logical_bytes(original)) << name;
    EXPECT_TRUE(back.is_contiguous()) << name;
    if (back.numel() > 0) {
      EXPECT_EQ(back.storage().kind(), Storage::Kind::Mapped) << name;  // zero-copy
      EXPECT_EQ(reinterpret_cast<uintptr_t>(back.data_ptr()) % back.element_size(), 0u) << name;
    }
  }
}

TEST_F(TempDir, SavesNonContiguousViews) {
  std::mt19937 rng(3);
  Tensor base = random_tensor({4, 6}, kFloat32, rng);
  Tensor transposed = base.t();
  Tensor strided = base.slice(1, 1, 6, 2);  // [4, 3], step 2
  Tensor expanded = random_tensor({3}, kInt64, rng).expand({2, 3});
  ASSERT_FALSE(transposed.is_contiguous());
  ASSERT_FALSE(strided.is_contiguous());
  const std::string file = path("views.safetensors");
  save_safetensors(file, std::map<std::string, Tensor>{{"t", transposed}, {"s", strided}, {"e", expanded}});
  LoadedTensors loaded = load_safetensors(file);
  EXPECT_EQ(loaded.at("t").sizes(), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(logical_bytes(loaded.at("t")), logical_bytes(transposed));
  EXPECT_EQ(logical_bytes(loaded.at("s")), logical_bytes(strided));
  EXPECT_EQ(logical_bytes(loaded.at("e")), logical_bytes(expanded));
}

TEST_F(TempDir, LoadedTensorsAreReadOnlyViewsThatOutliveTheHandle) {
  const std::string file = path("ro.safetensors");
  save_safetensors(file, TensorList{{"w", full({2, 2}, 3.0)}});
  Tensor w;
  {
    SafeOpen handle(file);
    w = handle.get_tensor("w");
  }
  EXPECT_EQ(w.sum().item<float>(), 12.0f);  // the map outlives the handle
  EXPECT_THROW(w.add_(1.0), Error);
  EXPECT_THROW(w.fill_(0.0), Error);
  Tensor copy = w.clone();
  copy.add_(1.0);
  EXPECT_EQ(copy.sum().item<float>(), 16.0f);
}

TEST_F(TempDir, SaveOverAFileThatIsMapped) {
  const std::string file = path("live.safetensors");
  save_safetensors(file, TensorList{{"w", full({1000}, 1.0)}});
  LoadedTensors old_model = load_safetensors(file);
  // Save the loaded (mapped) tensor itself plus new data over the very file it maps.
  save_safetensors(file, TensorList{{"w", full({1000}, 2.0)}, {"old", old_model.at("w")}});
  EXPECT_EQ(old_model.at("w").sum().item<float>(), 1000.0f);  // old map still intact
  LoadedTensors new_model = load_safetensors(file);
  EXPECT_EQ(new_model.at("w").sum().item<float>(), 2000.0f);
  EXPECT_EQ(new_model.at("old").sum().item<float>(), 1000.0f);
}

TEST_F(TempDir, SaveRejectsBadInputAndLeavesNoTempFile) {
  const std::string file = path("bad.safetensors");
  EXPECT_THROW(save_safetensors(file, TensorList{{"a", ones({1})}, {"a", ones({1})}}), Error);
  EXPECT_THROW(save_safetensors(file, TensorList{{"__metadata__", ones({1})}}), Error);
  EXPECT_THROW(save_safetensors(file, TensorList{{"a", Tensor()}}), Error);
  EXPECT_THROW(save_safetensors(file, TensorList{}, Metadata{{"k", "\xff"}}), Error);
  EXPECT_THROW(save_safetensors(path("missing_dir") + "/x.safetensors", TensorList{}), Error);
  EXPECT_FALSE(std::ifstream(file).good());
}

// ---- lazy handle, slices, conversions ----------------------------------------------------

TEST_F(TempDir, LazyHandleListsAndSlices) {
  std::vector<int32_t> values(12);
  for (int i = 0; i < 12; ++i) values[i] = i * 10;
  const std::string file = path("lazy.safetensors");
  save_safetensors(file, TensorList{{"m", from_blob(values.data(), {4, 3}, kInt32)}, {"s", scalar_tensor(2.5)}});
  SafeOpen handle(file);
  EXPECT_TRUE(handle.contains("m"));
  EXPECT_FALSE(handle.contains("x"));
  EXPECT_EQ(handle.info("m").shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(handle.info("m").dtype, FileDtype::I32);
  EXPECT_EQ(handle.info("m").nbytes(), 48u);
  Tensor rows = handle.get_slice("m", 1, 3);
  EXPECT_EQ(rows.sizes(), (std::vector<int64_t>{2, 3}));
  const int32_t* p = rows.data_ptr<int32_t>();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(p[i], (i + 3) * 10);
  EXPECT_EQ(rows.storage().kind(), Storage::Kind::Mapped);
  EXPECT_EQ(handle.get_slice("m", 2, 2).numel(), 0);
  EXPECT_THROW(handle.get_slice("m", 3, 5), Error);
  EXPECT_THROW(handle.get_slice("m", -1, 2), Error);
  EXPECT_THROW(handle.get_slice("s", 0, 1), Error);
  try {
    handle.get_tensor("nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no tensor named 'nope'"), std::string::npos);
  }
}

TEST_F(TempDir, Float8LoadsAsFloat32) {
  // Hand-decoded: E4M3 0x38 = 1, 0x7e = 448 (max), 0x01 = 2^-9, 0xb8 = -1, 0x7f = NaN;
  // E5M2 0x3c = 1, 0x7b = 57344 (max), 0x01 = 2^-16, 0x7c = inf, 0x7d = NaN.
  Bytes bytes = image("{" + entry("e4", "F8_E4M3", "[5]", 0, 5) + "," + entry("e5", "F8_E5M2", "[5]", 5, 10) + "}", 0);
  for (unsigned char b : {0x38, 0x7e, 0x01, 0xb8, 0x7f, 0x3c, 0x7b, 0x01, 0x7c, 0x7d}) bytes.push_back(b);
  const std::string file = path("f8.safetensors");
  write(file, bytes);
  SafeOpen handle(file);
  Tensor e4 = handle.get_tensor("e4");
  Tensor e5 = handle.get_tensor("e5");
  ASSERT_EQ(e4.scalar_type(), kFloat32);
  const float* a = e4.data_ptr<float>();
  EXPECT_EQ(a[0], 1.0f);
  EXPECT_EQ(a[1], 448.0f);
  EXPECT_EQ(a[2], std::ldexp(1.0f, -9));
  EXPECT_EQ(a[3], -1.0f);
  EXPECT_TRUE(std::isnan(a[4]));
  const float* b = e5.data_ptr<float>();
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(b[1], 57344.0f);
  EXPECT_EQ(b[2], std::ldexp(1.0f, -16));
  EXPECT_EQ(b[3], INFINITY);
  EXPECT_TRUE(std::isnan(b[4]));
  EXPECT_EQ(handle.get_slice("e4", 1, 2).item<float>(), 448.0f);
}

TEST_F(TempDir, UnrepresentableDtypesListedButNotMaterialised) {
  const std::string header = "{" + entry("a", "U16", "[2]", 0, 4) + "," + entry("b", "U64", "[1]", 4, 12) + "}";
  const std::string file = path("u16.safetensors");
  write(file, image(header, 12));
  SafeOpen handle(file);
  EXPECT_EQ(handle.info("a").dtype, FileDtype::U16);
  EXPECT_EQ(handle.info("b").shape, std::vector<int64_t>{1});
  try {
    handle.get_tensor("a");
    FAIL();
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("tensor 'a'"), std::string::npos) << message;
    EXPECT_NE(message.find("dtype U16"), std::string::npos) << message;
  }
  EXPECT_THROW(load_safetensors(file), Error);
}

TEST_F(TempDir, MisalignedTensorIsCopiedAligned) {
  // Header length 9 puts the data at byte 17; the F32 after one U8 sits at file offset 18.
  const std::string header = "{" + entry("f", "F32", "[1]", 1, 5) + "," + entry("b", "U8", "[1]", 0, 1) + "}";
  Bytes bytes = image(header, 0);
  bytes.push_back(9);
  const float value = 1.5f;
  const auto* raw = reinterpret_cast<const unsigned char*>(&value);
  bytes.insert(bytes.end(), raw, raw + 4);
  const std::string file = path("misaligned.safetensors");
  write(file, bytes);
  LoadedTensors loaded = load_safetensors(file);
  EXPECT_EQ(loaded.tensors[0].first, "b");  // file order
  EXPECT_EQ(loaded.at("f").item<float>(), 1.5f);
  EXPECT_EQ(loaded.at("b").item<uint8_t>(), 9);
}

TEST_F(TempDir, BoolBytesMustBeZeroOrOne) {
  Bytes bytes = image("{" + entry("m", "BOOL", "[3]", 0, 3) + "}", 0);
  for (unsigned char b : {1, 0, 2}) bytes.push_back(b);
  const std::string file = path("bool.safetensors");
  write(file, bytes);
  try {
    load_safetensors(file);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("BOOL element 2 has byte value 2"), std::string::npos) << e.what();
  }
}

TEST_F(TempDir, FileErrorsNameTheFile) {
  const std::string missing = path("missing.safetensors");
  try {
    load_safetensors(missing);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos);
  }
  const std::string truncated = path("short.safetensors");
  write(truncated, Bytes{1, 2, 3});
  EXPECT_THROW(load_safetensors(truncated), Error);
  const std::string empty_file = path("empty.safetensors");
  write(empty_file, Bytes{});
  EXPECT_THROW(load_safetensors(empty_file), Error);
  EXPECT_THROW(load_safetensors(::testing::TempDir()), Error);  // a directory
}

}  // namespace
}  // namespace ember::io
