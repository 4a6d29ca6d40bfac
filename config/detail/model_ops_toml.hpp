// Parsing of model.toml's `[[op]]` tables (config/model_ops.hpp), for model.cpp.
#pragma once

#include <toml++/toml.h>

#include "config/model_ops.hpp"

namespace spindle::config::detail {

/// Parses `[[op]]` tables; errors name "op[3].aggr" and the value.
expected<std::vector<gnn_op>> parse_ops(const toml::array& ops, std::string_view origin);

}  // namespace spindle::config::detail
