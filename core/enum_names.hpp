// An enum's values and their names in one table, so that to_string, parse and
// the list an error offers cannot disagree (instead of a switch and a loop).
//   constexpr enum_names<color, 2> kColors{{{{color::red, "red"}, {color::blue, "blue"}}}};
//   kColors.name(color::red) == "red"; kColors.parse("blue") == color::blue;
//   kColors.choices() == "red or blue".
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/status.hpp"

namespace spindle {

template <class E, std::size_t N>
struct enum_names {
  std::array<std::pair<E, std::string_view>, N> entries;

  /// The value's name; `fallback` for a value outside the table.
  constexpr std::string_view name(E value, std::string_view fallback = "?") const {
    for (const auto& [e, n] : entries)
      if (e == value) return n;
    return fallback;
  }
  constexpr std::optional<E> parse(std::string_view text) const {
    for (const auto& [e, n] : entries)
      if (n == text) return e;
    return std::nullopt;
  }
  /// The value named `text`, or an error naming `what` and the choices:
  /// "grouping policy 'x': expected fifo, sqtf or bqt".
  expected<E> parse(std::string_view text, std::string_view what) const {
    if (auto e = parse(text)) return *e;
    return make_error(errc::invalid_argument, "{} '{}': expected {}", what, text, choices());
  }
  /// Every name, as an error offers them: "a, b or c".
  std::string choices(std::string_view last = " or ") const {
    std::string out;
    for (std::size_t i = 0; i < N; ++i) {
      if (i > 0) out += i + 1 == N ? last : std::string_view(", ");
      out += entries[i].second;
    }
    return out;
  }
};

}  // namespace spindle
