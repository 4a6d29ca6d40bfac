// The digest the exporter records in [verified]: a hand edit of what the model
// computes (an op's width, a link model's pair types, the weights' CRC) is
// refused on load, naming the key; serving settings may be edited freely.
#include "config/model_digest.hpp"

#include <gtest/gtest.h>

namespace spindle::config {
namespace {

const std::string kBody =
    "[model]\nname = \"m\"\narch = \"stack\"\nin = 4\nout = 3\nweights_crc32 = \"0badf00d\"\n"
    "\n[[op]]\nkind = \"sage\"\nprefix = \"conv\"\nin = 4\nout = 3\n";

std::string verified(const std::string& body, const std::string& digest) {
  return body + "\n[verified]\nchecked = true\ndescription_xxh3_64 = \"" + digest + "\"\n";
}

std::string digest_of(const std::string& body) {
  auto d = parse_model_desc(body, "m/model.toml");
  EXPECT_TRUE(d.has_value()) << d.error().message();
  return d ? description_digest(*d) : "";
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  s.replace(s.find(from), from.size(), to);
  return s;
}

TEST(model_digest_test, the_exported_description_loads_and_a_computation_edit_is_refused) {
  const std::string digest = digest_of(kBody);
  ASSERT_EQ(digest.size(), 16u);
  auto same = parse_model_desc(verified(kBody, digest), "m/model.toml");
  ASSERT_TRUE(same.has_value()) << same.error().message();
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"kind = \"sage\"", "kind = \"gcn\""},
           {"weights_crc32 = \"0badf00d\"", "weights_crc32 = \"0badf00e\""},
           {"kind = \"sage\"\nprefix", "kind = \"sage\"\naggr = \"max\"\nprefix"}}) {
    auto edited = parse_model_desc(verified(replaced(kBody, from, to), digest), "m/model.toml");
    ASSERT_FALSE(edited.has_value()) << to;
    EXPECT_NE(edited.error().message().find("m/model.toml: what the model computes was edited"),
              std::string::npos)
        << edited.error().message();
    EXPECT_NE(edited.error().message().find(digest), std::string::npos);
  }
}

TEST(model_digest_test, serving_settings_are_not_part_of_the_digest) {
  const std::string digest = digest_of(kBody);
  const std::string serving = replaced(
      kBody, "name = \"m\"\n",
      "name = \"renamed\"\nfanouts = [5]\nmax_batch = 64\nslo_ms = 20\nprecision = \"bf16\"\n"
      "sampling = \"per_request\"\nversion_policy = \"latest:2\"\n");
  auto d = parse_model_desc(verified(serving, digest), "m/model.toml");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_EQ(d->name, "renamed");
  EXPECT_EQ(description_digest(*d), digest);
}

// A string cannot carry further keys into the digest's text: the weights name
// holding the weights_crc32 line (which would drop the CRC check and keep the
// digest) is refused, and an op name with a quote digests apart from the plain one.
TEST(model_digest_test, strings_cannot_smuggle_keys_past_the_digest) {
  const std::string injected = replaced(
      kBody, "weights_crc32 = \"0badf00d\"\n", "");
  auto bad = parse_model_desc(
      replaced(injected, "arch = \"stack\"\n",
               "arch = \"stack\"\nweights = \"w.safetensors\\\"\\nweights_crc32 = \\\"0badf00d\"\n"),
      "m/model.toml");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("model.weights: holds a quote"), std::string::npos)
      << bad.error().message();
  auto quoted = parse_model_desc(replaced(kBody, "prefix = \"conv\"", "prefix = \"co\\\"nv\""),
                                 "m/model.toml");
  ASSERT_TRUE(quoted.has_value()) << quoted.error().message();
  EXPECT_EQ(quoted->ops[0].prefix, "co\"nv");
  EXPECT_NE(description_digest(*quoted), digest_of(kBody));
  auto again = parse_model_desc(to_toml(*quoted), "again");
  ASSERT_TRUE(again.has_value()) << again.error().message();
  EXPECT_EQ(again->ops[0].prefix, "co\"nv");
}

// Every exported model records this digest: a change to what to_toml writes for
// an existing field changes it and makes those models refuse to load. If this
// fails, keep to_toml's text for existing fields as it was.
TEST(model_digest_test, the_digest_of_a_fixed_description_does_not_change) {
  EXPECT_EQ(digest_of(kBody), "bdd5cc03c2a57a34");
}

TEST(model_digest_test, a_malformed_digest_is_named_malformed) {
  for (const std::string v : {"12", "", "ABCDEF0123456789", " 0123456789abcdef"}) {
    auto d = parse_model_desc(verified(kBody, v), "m/model.toml");
    ASSERT_FALSE(d.has_value()) << v;
    EXPECT_NE(d.error().message().find("malformed"), std::string::npos) << d.error().message();
  }
}

TEST(model_digest_test, a_description_without_the_key_is_not_checked) {
  auto d = parse_model_desc(kBody + "\n[verified]\nchecked = false\n", "m/model.toml");
  ASSERT_TRUE(d.has_value()) << d.error().message();
}

}  // namespace
}  // namespace spindle::config
