// enum_names: one table gives to_string, parse and the choices an error lists.
#include "core/enum_names.hpp"

#include <gtest/gtest.h>

namespace spindle {
namespace {

enum class shade { light, dark, none };

constexpr enum_names<shade, 2> kShades{{{{shade::light, "light"}, {shade::dark, "dark"}}}};

TEST(enum_names_test, names_parse_back_to_their_values) {
  for (auto s : {shade::light, shade::dark}) EXPECT_EQ(kShades.parse(kShades.name(s)), s);
  static_assert(kShades.name(shade::dark) == "dark");
}

TEST(enum_names_test, unknown_names_and_values_are_told_apart) {
  EXPECT_FALSE(kShades.parse("Light").has_value());
  EXPECT_FALSE(kShades.parse("").has_value());
  EXPECT_EQ(kShades.name(shade::none), "?");
  EXPECT_EQ(kShades.name(shade::none, "unknown"), "unknown");
}

TEST(enum_names_test, a_refused_name_is_named_with_the_choices) {
  EXPECT_EQ(*kShades.parse("dark", "shade"), shade::dark);
  auto bad = kShades.parse("grey", "shade");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message(), "shade 'grey': expected light or dark");
}

TEST(enum_names_test, choices_list_every_name) {
  EXPECT_EQ(kShades.choices(), "light or dark");
  constexpr enum_names<shade, 3> three{
      {{{shade::light, "a"}, {shade::dark, "b"}, {shade::none, "c"}}}};
  EXPECT_EQ(three.choices(), "a, b or c");
  EXPECT_EQ(three.choices(", "), "a, b, c");
}

}  // namespace
}  // namespace spindle
