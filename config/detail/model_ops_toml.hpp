// Parsing of model.toml's `[[op]]` and typed tables (config/model_ops.hpp,
// config/model_types.hpp) for model.cpp, and the op chain check both kinds share.
#pragma once

#include <toml++/toml.h>

#include <map>
#include <string>

#include "config/model_ops.hpp"
#include "config/model_types.hpp"

namespace spindle::config::detail {

/// Parses `[[op]]` tables; errors name "op[3].aggr" and the value.
expected<std::vector<gnn_op>> parse_ops(const toml::array& ops, std::string_view origin);
/// Parses [[node_type]], [[edge_type]] and [[output]]; errors name the table and key.
expected<model_types> parse_types(const toml::table& root, std::string_view origin);
/// [model] pair_types = ["src type", "dst type"] into `t.pair_types` (two names).
status parse_pair_types(const toml::table& model, model_types& t, std::string_view origin);
/// Names, inputs and widths along a chain of ops that may read `widths`' values;
/// fills each op's width. `what` names the list in errors ("op", "decoder_op").
status validate_chain(std::vector<gnn_op>& ops, std::map<std::string, int> widths,
                      std::string previous, std::string_view what);

}  // namespace spindle::config::detail
