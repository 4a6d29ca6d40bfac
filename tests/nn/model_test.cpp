#include "nn/model.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <vector>

#include "tests/support/file_bytes.hpp"

namespace spindle::nn {
namespace {

// Passes when `r` failed and its error names `what`; else says what it got.
template <class T>
::testing::AssertionResult refused_naming(const expected<T>& r, std::string_view what) {
  if (r) return ::testing::AssertionFailure() << "accepted; expected an error naming: " << what;
  if (r.error().message().find(what) == std::string::npos)
    return ::testing::AssertionFailure() << r.error().message() << "\n does not name: " << what;
  return ::testing::AssertionSuccess();
}

// A fresh scratch directory, removed when the test binary exits.
std::string temp(const std::string& name) {
  static struct sweeper {
    std::vector<std::filesystem::path> dirs;
    ~sweeper() {
      for (const auto& d : dirs) std::filesystem::remove_all(d);
    }
  } made;
  auto d =
      std::filesystem::temp_directory_path() / ("spindle_nn_" + name + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  made.dirs.push_back(d);
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

// model init records the weights' CRC-32 in model.toml; a weights file changed
// since (one flipped byte in a float) is refused by name instead of served, and
// a malformed weights_crc32 is refused too. A model.toml without it loads.
TEST(model_test, weights_that_no_longer_match_their_crc32_are_refused) {
  std::string dir = temp("crc32");
  ASSERT_TRUE(init_model(sage(12, 8, 3), 5, dir).is_ok());
  auto d = config::load_model_desc(dir);
  ASSERT_TRUE(d.has_value());
  ASSERT_EQ(d->weights_crc32.size(), 8u);
  {
    std::fstream f(dir + "/weights.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    // Inside the last tensor's floats.
    testing::flip_byte(f, testing::size_of(f) - 5, 0x10);
  }
  heap_allocator alloc;
  auto m = model::load(dir, alloc);
  ASSERT_TRUE(refused_naming(m, "does not match model.toml's weights_crc32"));
  // Without the record, nothing is checked (models written before it existed).
  std::ifstream toml(dir + "/model.toml");
  std::string text(std::istreambuf_iterator<char>(toml), {});
  const auto line = text.find("weights_crc32");
  text.erase(line, text.find('\n', line) - line + 1);
  std::ofstream(dir + "/model.toml") << text;
  EXPECT_TRUE(model::load(dir, alloc).has_value());
  auto bad = config::parse_model_desc(
      "[model]\narch = \"graphsage\"\nweights_crc32 = \"xyz\"\nin = 2\nhidden = 2\nout = 2\n",
      "m/model.toml");
  ASSERT_TRUE(refused_naming(bad, "weights_crc32 = 'xyz'"));
}

TEST(model_test, wrong_shapes_missing_tensors_and_dtypes_name_the_tensor) {
  std::string dir = temp("bad");
  ASSERT_TRUE(init_model(sage(12, 8, 3), 5, dir).is_ok());
  heap_allocator alloc;
  auto d = sage(10, 8, 3);  // in = 10 vs the stored 12
  auto w = safetensors_file::open(dir + "/weights.safetensors");
  ASSERT_TRUE(w.has_value());
  auto m = model::from(d, *w, alloc);
  ASSERT_TRUE(
      refused_naming(m, "tensor 'convs.0.lin_l.weight' has shape [8, 12], expected [8, 10]"));
  ASSERT_TRUE(write_safetensors(dir + "/partial.safetensors",
                                {{"convs.0.lin_l.weight", {8, 12}, std::vector<float>(96)}})
                  .is_ok());
  auto p = safetensors_file::open(dir + "/partial.safetensors");
  auto m2 = model::from(sage(12, 8, 3), *p, alloc);
  ASSERT_TRUE(refused_naming(m2,
                             "needs tensor 'convs.0.lin_l.bias', which the file does not "
                             "hold; it holds 1 tensors: convs.0.lin_l.weight"));
}

// TransformerConv's key/query/value biases are all there (qkv_bias, the default)
// or all absent: one missing is refused by name, never served without it.
TEST(model_test, an_attention_ops_missing_projection_bias_is_refused_by_name) {
  for (const char* kind : {"transformer", "res_gated"}) {
    const std::string text = fmt::format(
        "[model]\narch = \"stack\"\nin = 6\nout = 4\n[[op]]\nkind = \"{}\"\nprefix = \"c\"\n"
        "out = 4\n",
        kind);
    auto d = config::parse_model_desc(text, "m.toml");
    ASSERT_TRUE(d.has_value()) << d.error().message();
    std::string dir = temp(std::string("qkv-") + kind);
    ASSERT_TRUE(init_model(*d, 5, dir).is_ok());
    auto full = safetensors_file::open(dir + "/weights.safetensors");
    ASSERT_TRUE(full.has_value());
    std::vector<safetensor_f32> kept;
    for (const auto& [name, view] : full->tensors())
      if (name != "c.lin_query.bias") kept.push_back({name, view.shape, *full->as_f32(name, {})});
    ASSERT_TRUE(write_safetensors(dir + "/less.safetensors", kept).is_ok());
    auto less = safetensors_file::open(dir + "/less.safetensors");
    heap_allocator alloc;
    auto m = model::from(*d, *less, alloc);
    ASSERT_FALSE(m.has_value()) << kind;
    EXPECT_NE(m.error().message().find("needs tensor 'c.lin_query.bias'"), std::string::npos)
        << m.error().message();
  }
}

// A weights file with tensors the description does not use (a BatchNorm after
// the first layer, as PyG's examples write it) is refused by name, never served
// without them; model.ignore_tensors is the named opt-out.
TEST(model_test, tensors_the_model_does_not_use_are_refused_by_name) {
  std::string dir = temp("extra");
  ASSERT_TRUE(init_model(sage(12, 8, 3), 5, dir).is_ok());
  auto w = safetensors_file::open(dir + "/weights.safetensors");
  ASSERT_TRUE(w.has_value());
  std::vector<safetensor_f32> tensors;
  for (const auto& [name, _] : w->tensors())
    tensors.push_back({name, w->tensors().at(name).shape, *w->as_f32(name, {})});
  for (auto name : {"bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var"})
    tensors.push_back({name, {8}, std::vector<float>(8, 1.0f)});
  ASSERT_TRUE(write_safetensors(dir + "/with_bn.safetensors", tensors).is_ok());
  auto bn = safetensors_file::open(dir + "/with_bn.safetensors");
  ASSERT_TRUE(bn.has_value());
  heap_allocator alloc;
  auto m = model::from(sage(12, 8, 3), *bn, alloc);
  ASSERT_TRUE(refused_naming(m,
                             "does not use 4 tensor(s) of the file: bn1.bias, bn1.running_mean, "
                             "bn1.running_var, bn1.weight"));
  auto d = sage(12, 8, 3);
  d.ignore_tensors = {"bn1."};
  auto ok = model::from(d, *bn, alloc);
  ASSERT_TRUE(ok.has_value()) << ok.error().to_string();
  d.ignore_tensors = {"bn1.weight"};  // a name, not the whole prefix: the rest still refused
  auto partial = model::from(d, *bn, alloc);
  ASSERT_TRUE(refused_naming(partial, "does not use 3 tensor(s)"));
}

// PyG 2.3's GATConv stores its shared projection twice; a second projection
// that differs (a bipartite GATConv) is refused, not served with lin_src alone.
TEST(model_test, a_gat_target_projection_must_equal_the_shared_one) {
  auto d = sage(12, 8, 3);
  d.arch = config::model_arch::gat;
  std::string dir = temp("gat_dst");
  ASSERT_TRUE(init_model(d, 5, dir).is_ok());
  heap_allocator alloc;
  auto shared = model::load(dir, alloc);  // init writes lin_dst equal to lin_src
  ASSERT_TRUE(shared.has_value()) << shared.error().to_string();
  auto w = safetensors_file::open(dir + "/weights.safetensors");
  std::vector<safetensor_f32> tensors;
  for (const auto& [name, view] : w->tensors()) {
    tensors.push_back({name, view.shape, *w->as_f32(name, {})});
    if (name == "convs.0.lin_dst.weight") tensors.back().values[0] += 1.0f;
  }
  ASSERT_TRUE(write_safetensors(dir + "/bipartite.safetensors", tensors).is_ok());
  auto b = safetensors_file::open(dir + "/bipartite.safetensors");
  auto m = model::from(d, *b, alloc);
  ASSERT_TRUE(refused_naming(m, "'convs.0.lin_dst.weight' differs from 'convs.0.lin_src.weight'"));
}

// PyG's idiomatic attribute names (conv1, conv2) are named in the error with the
// way out, rather than a bare "missing tensor".
TEST(model_test, a_missing_tensor_lists_what_the_file_holds) {
  std::string dir = temp("pyg_names");
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(write_safetensors(dir + "/w.safetensors",
                                {{"conv1.lin_l.weight", {8, 12}, std::vector<float>(96)},
                                 {"conv1.lin_l.bias", {8}, std::vector<float>(8)}})
                  .is_ok());
  auto w = safetensors_file::open(dir + "/w.safetensors");
  heap_allocator alloc;
  auto m = model::from(sage(12, 8, 3), *w, alloc);
  ASSERT_TRUE(refused_naming(m, "it holds 2 tensors: conv1.lin_l.bias, conv1.lin_l.weight"));
  EXPECT_NE(m.error().message().find("export_pyg"), std::string::npos) << m.error().message();
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
  ASSERT_TRUE(refused_naming(f, "tensor 'a': data_offsets [0, 16] outside the 8-byte data"));
  write(R"({"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", 8);
  f = safetensors_file::open(dir + "/w.safetensors");
  ASSERT_TRUE(f.has_value());
  auto v = f->as_f32("a", {1});
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code(), errc::unsupported);
  write("not json", 0);
  EXPECT_FALSE(safetensors_file::open(dir + "/w.safetensors").has_value());
}

// What a hostile model folder could hold: a header nested 100,000 deep (a
// recursive dump() overflowed the stack), two tensors sharing bytes, NaN
// weights, a weights file that is a link out of the folder (its bytes were
// quoted in the error), and a width past int (4294967360 loaded as 64).
TEST(model_test, hostile_model_folders_are_refused_by_name) {
  std::string dir = temp("hostile");
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& header, const std::string& data) {
    std::ofstream f(dir + "/w.safetensors", std::ios::binary);
    std::uint64_t n = header.size();
    f.write(reinterpret_cast<const char*>(&n), 8);
    f << header << data;
  };
  const std::size_t depth = 100'000;
  write(R"({"__metadata__":{"x":)" + std::string(depth, '[') + std::string(depth, ']') + "}}", "");
  auto f = safetensors_file::open(dir + "/w.safetensors");
  ASSERT_TRUE(refused_naming(f, "nested deeper than 64"));
  write(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", std::string(12, '\0'));
  f = safetensors_file::open(dir + "/w.safetensors");
  ASSERT_TRUE(refused_naming(f, "tensors 'a' and 'b' overlap"));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::string bytes(8, '\0');
  std::memcpy(bytes.data() + 4, &nan, 4);
  write(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", bytes);
  f = safetensors_file::open(dir + "/w.safetensors");
  ASSERT_TRUE(f.has_value());
  auto v = f->as_f32("a", {2});
  ASSERT_TRUE(refused_naming(v, "tensor 'a' holds nan at element 1"));

  const std::string model_dir = temp("hostile_link");
  ASSERT_TRUE(init_model(sage(12, 8, 3), 5, model_dir).is_ok());
  std::filesystem::remove(model_dir + "/weights.safetensors");
  std::filesystem::create_symlink("/etc/passwd", model_dir + "/weights.safetensors");
  heap_allocator alloc;
  auto m = model::load(model_dir, alloc);
  ASSERT_TRUE(refused_naming(m, "a link to a file outside the model folder"));
  EXPECT_EQ(m.error().message().find("root"), std::string::npos);  // no byte of it quoted

  auto d = config::parse_model_desc(
      "[model]\narch = \"graphsage\"\nin = 4\nhidden = 4294967360\nout = 2\n", "m.toml");
  ASSERT_TRUE(refused_naming(d, "model.hidden = 4294967360 is out of range"));
}

TEST(model_test, model_description_errors_name_the_field) {
  auto d = config::parse_model_desc("[model]\narch = \"graphsage\"\nin = 4\nhidden = 0\nout = 2\n",
                                    "m.toml");
  ASSERT_TRUE(refused_naming(d, "m.toml: model.hidden = 0: must be > 0"));
  d = config::parse_model_desc("[model]\narch = \"transformer\"\n", "m.toml");
  EXPECT_NE(d.error().message().find("model.arch = 'transformer'"), std::string::npos);
  d = config::parse_model_desc(
      "[model]\narch = \"dlrm\"\ndense_in = 4\nbottom = [8, 4]\ntop = [3]\n"
      "embedding_dim = 4\ntable_rows = [10]\n",
      "m.toml");
  EXPECT_NE(d.error().message().find("model.top = [3]: must end with 1"), std::string::npos);
  // Fanouts: one per layer, round-tripped through to_toml.
  d = config::parse_model_desc(
      "[model]\narch = \"graphsage\"\nin = 4\nhidden = 8\nout = 2\nlayers = 3\n"
      "fanouts = [25, 10]\n",
      "m.toml");
  ASSERT_TRUE(refused_naming(d, "m.toml: model.fanouts = [25, 10]: 2 values for a model of 3"));
  d = config::parse_model_desc(
      "[model]\narch = \"graphsage\"\nin = 4\nhidden = 8\nout = 2\nfanouts = [25, 99999999999]\n",
      "m.toml");
  ASSERT_TRUE(refused_naming(d, "out of range"));
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

// A stack model's [[op]] tables: what Spindle would not honour is refused by
// name (a setting a kind does not have, an unknown input, widths that do not
// chain, GCN ops mixing graph and block degrees); a valid one round-trips.
TEST(model_test, stack_ops_refuse_what_they_cannot_honour) {
  const std::string head = "[model]\narch = \"stack\"\nin = 4\nout = 2\n";
  auto err = [&](const std::string& ops) {
    auto d = config::parse_model_desc(head + ops, "m.toml");
    return d ? std::string("accepted") : d.error().message();
  };
  // Each stack of ops and what its refusal must name.
  const std::pair<std::string, std::string> cases[] = {
      {"[[op]]\nkind = \"sage\"\nprefix = \"c\"\nout = 2\nactivation = \"elu\"\n",
       "m.toml: op[0].activation: not a setting of sage that Spindle honours"},
      {"[[op]]\nkind = \"sage\"\nprefix = \"c\"\nout = 2\naggr = \"lstm\"\n",
       "op[0].aggr = 'lstm'"},
      {"[[op]]\nkind = \"pna\"\n", "op[0].kind = 'pna'"},
      {"[[op]]\nkind = \"transformer\"\nprefix = \"c\"\nout = 2\nroot_weight = false\nbeta = true\n",
       "beta = true gates the root term"},
      {"[[op]]\nkind = \"gatv2\"\nprefix = \"c\"\nout = 1000000\nheads = 1000000\n",
       "heads x out = 1000000 x 1000000 exceeds 1000000 columns"},
      {"[[op]]\nkind = \"transformer\"\nprefix = \"c\"\nout = 2\nedge_dim = -2\n",
       "op[0].edge_dim must be an integer in 0..1000000"},
      {"[[op]]\nkind = \"sage\"\nprefix = \"c\"\nin = 5\nout = 2\n",
       "op[0] (sage).in = 5, but its input is 4 wide"},
      {"[[op]]\nkind = \"sage\"\nprefix = \"c\"\nout = 2\n"
       "[[op]]\nkind = \"add\"\ninputs = [\"op0\", \"nope\"]\n",
       "'nope' is not an earlier op's name"},
      {"[[op]]\nkind = \"gcn\"\nprefix = \"a\"\nout = 4\n"
       "[[op]]\nkind = \"gcn\"\nprefix = \"b\"\nout = 2\nnorm = \"block\"\n",
       "one kind per model"},
      {"[[op]]\nkind = \"linear\"\nprefix = \"l\"\nout = 2\n", "needs a message-passing op"},
      {"[[op]]\nkind = \"sage\"\nprefix = \"c\"\nout = 3\n",
       "the last op produces 3 columns, model.out = 2"},
  };
  for (const auto& [ops, names] : cases) {
    const std::string error = err(ops);
    EXPECT_NE(error.find(names), std::string::npos) << ops << "\n -> " << error;
  }
  const std::string ok =
      "fanouts = [-1, 10]\n"
      "[[op]]\nkind = \"gat\"\nprefix = \"c1\"\nout = 3\nheads = 2\n"
      "[[op]]\nkind = \"elu\"\nalpha = 0.5\n"
      "[[op]]\nkind = \"sage\"\nprefix = \"c2\"\nout = 2\naggr = \"max\"\n"
      "[[op]]\nkind = \"log_softmax\"\n";
  auto d = config::parse_model_desc(head + ok, "m.toml");
  ASSERT_TRUE(d.has_value()) << d.error().to_string();
  EXPECT_EQ(d->layers, 2);
  EXPECT_EQ(d->ops[0].width, 6);
  EXPECT_EQ(d->fanouts, (std::vector<int>{-1, 10}));
  auto again = config::parse_model_desc(config::to_toml(*d), "again.toml");
  ASSERT_TRUE(again.has_value()) << again.error().to_string() << "\n" << config::to_toml(*d);
  EXPECT_EQ(config::summary(*again), config::summary(*d));
  EXPECT_EQ(again->ops[1].alpha, 0.5f);
  EXPECT_EQ(again->ops[2].aggr, "max");
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
