// One key of a JSON object read as T, with an error naming where it is
// ("metadata.json: node_types[1].count is missing", "... is not an integer")
// instead of the JSON library's message. Pure; for the graph folder's readers.
#pragma once

#include <exception>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/status.hpp"

namespace spindle::graph::detail {

/// j[key] as T; `where` prefixes the error ("FILE: node_types[1]"), `kind`
/// says what T is ("an integer"), `code` is the error's code.
template <class T>
expected<T> json_field(const nlohmann::json& j, std::string_view where, const char* key,
                       const char* kind, errc code) {
  if (!j.is_object() || !j.contains(key))
    return make_error(code, "{}.{} is missing", where, key);
  try {
    return j.at(key).get<T>();
  } catch (const std::exception&) {
    return make_error(code, "{}.{} is not {}", where, key, kind);
  }
}

}  // namespace spindle::graph::detail
