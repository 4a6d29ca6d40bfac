#include "nn/model.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace spindle::nn {
namespace {

std::string temp(const std::string& name) {
  auto d =
      std::filesystem::temp_directory_path() / ("spindle_nn_" + name + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d.string();
}

config::model_desc sage(int in, int hidden, int out) {
  config::model_desc d;
  d.arch = config::model_arch::graphsage;
  d.in = in, d.hidden = hidden, d.out = out;
  return d;
}

TEST(model_test, init_then_load_round_trips_every_architecture) {
  for (auto arch : {config::model_arch::graphsage, config::model_arch::gcn, config::model_arch::gat,
                    config::model_arch::gin}) {
    auto d = sage(12, 8, 3);
    d.arch = arch;
    std::string dir = temp(std::string(config::to_string(arch)));
    ASSERT_TRUE(init_model(d, 5, dir).is_ok());
    heap_allocator alloc;
    auto m = model::load(dir, alloc);
    ASSERT_TRUE(m.has_value()) << m.error().to_string();
    EXPECT_GT(m->parameter_count(), 0);
    EXPECT_EQ(alloc.current(), m->weight_bytes());
  }
}

TEST(model_test, wrong_shapes_missing_tensors_and_dtypes_name_the_tensor) {
  std::string dir = temp("bad");
  ASSERT_TRUE(init_model(sage(12, 8, 3), 5, dir).is_ok());
  heap_allocator alloc;
  auto d = sage(10, 8, 3);  // in = 10 vs the stored 12
  auto w = safetensors_file::open(dir + "/weights.safetensors");
  ASSERT_TRUE(w.has_value());
  auto m = model::from(d, *w, alloc);
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(
      m.error().message().find("tensor 'convs.0.lin_l.weight' has shape [8, 12], expected [8, 10]"),
      std::string::npos)
      << m.error().message();
  ASSERT_TRUE(write_safetensors(dir + "/partial.safetensors",
                                {{"convs.0.lin_l.weight", {8, 12}, std::vector<float>(96)}})
                  .is_ok());
  auto p = safetensors_file::open(dir + "/partial.safetensors");
  auto m2 = model::from(sage(12, 8, 3), *p, alloc);
  ASSERT_FALSE(m2.has_value());
  EXPECT_NE(m2.error().message().find("missing tensor 'convs.0.lin_l.bias'"), std::string::npos)
      << m2.error().message();
}

TEST(model_test, safetensors_rejects_corrupt_headers) {
  std::string dir = temp("corrupt");
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& header, std::size_t data) {
    std::ofstream f(dir + "/w.safetensors", std::ios::binary);
    std::uint64_t n = header.size();
    f.write(reinterpret_cast<const char*>(&n), 8);
    f << header << std::string(data, '\0');
  };
  write(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8);
  auto f = safetensors_file::open(dir + "/w.safetensors");
  ASSERT_FALSE(f.has_value());
  EXPECT_NE(f.error().message().find("tensor 'a': data_offsets [0, 16] outside the 8-byte data"),
            std::string::npos);
  write(R"({"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", 8);
  f = safetensors_file::open(dir + "/w.safetensors");
  ASSERT_TRUE(f.has_value());
  auto v = f->as_f32("a", {1});
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code(), errc::unsupported);
  write("not json", 0);
  EXPECT_FALSE(safetensors_file::open(dir + "/w.safetensors").has_value());
}

TEST(model_test, model_description_errors_name_the_field) {
  auto d = config::parse_model_desc("[model]\narch = \"graphsage\"\nin = 4\nhidden = 0\nout = 2\n",
                                    "m.toml");
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.error().message().find("m.toml: model.hidden = 0: must be > 0"), std::string::npos);
  d = config::parse_model_desc("[model]\narch = \"transformer\"\n", "m.toml");
  EXPECT_NE(d.error().message().find("model.arch = 'transformer'"), std::string::npos);
  d = config::parse_model_desc(
      "[model]\narch = \"dlrm\"\ndense_in = 4\nbottom = [8, 4]\ntop = [3]\n"
      "embedding_dim = 4\ntable_rows = [10]\n",
      "m.toml");
  EXPECT_NE(d.error().message().find("model.top = [3]: must end with 1"), std::string::npos);
  // Fanouts (issue #16): one per layer, round-tripped through to_toml.
  d = config::parse_model_desc(
      "[model]\narch = \"graphsage\"\nin = 4\nhidden = 8\nout = 2\nlayers = 3\n"
      "fanouts = [25, 10]\n",
      "m.toml");
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.error().message().find("m.toml: model.fanouts = [25, 10]: 2 values for a model of 3"),
            std::string::npos)
      << d.error().message();
  d = config::parse_model_desc(
      "[model]\narch = \"graphsage\"\nin = 4\nhidden = 8\nout = 2\nfanouts = [25, 99999999999]\n",
      "m.toml");
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.error().message().find("out of range"), std::string::npos) << d.error().message();
  d = config::parse_model_desc(
      "[model]\narch = \"graphsage\"\nin = 4\nhidden = 8\nout = 2\nfanouts = [25, 10]\n", "m.toml");
  ASSERT_TRUE(d.has_value()) << d.error().to_string();
  EXPECT_EQ(d->fanouts, (std::vector<int>{25, 10}));
  auto again = config::parse_model_desc(config::to_toml(*d), "again.toml");
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->fanouts, d->fanouts);
  EXPECT_FALSE(config::parse_model_arch("x").has_value());
  for (auto a : {config::model_arch::graphsage, config::model_arch::dlrm})
    EXPECT_EQ(*config::parse_model_arch(config::to_string(a)), a);
}

TEST(model_test, buffer_allocator_reuses_freed_space_and_reports_exhaustion) {
  alignas(512) static std::byte buffer[4096];
  buffer_allocator a({buffer, sizeof buffer});
  {
    auto t1 = tensor::empty(a, {100});  // 400 B -> 512
    auto t2 = tensor::empty(a, {200});  // 800 B -> 1024
    ASSERT_TRUE(t1.has_value() && t2.has_value());
    EXPECT_EQ(a.current(), 1536u);
  }
  EXPECT_EQ(a.current(), 0u);
  EXPECT_EQ(a.peak(), 1536u);
  auto big = tensor::empty(a, {1024});  // exactly the buffer
  ASSERT_TRUE(big.has_value());
  auto more = tensor::empty(a, {1});
  ASSERT_FALSE(more.has_value());
  EXPECT_EQ(more.error().code(), errc::resource_exhausted);
}

}  // namespace
}  // namespace spindle::nn
