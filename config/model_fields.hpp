// Which model.toml fields each architecture reads. A field the architecture
// ignores (log_softmax on a DLRM, heads on GraphSAGE, table_rows on a GNN) would
// be served as if it were absent: refused by name instead, with what it reads.
#pragma once

#include "config/model.hpp"
#include "core/status.hpp"

namespace spindle::config {

/// Refuses any field `d.arch` would ignore, naming it, its value and the
/// architectures that read it. Fields at their defaults pass.
status validate_arch_fields(const model_desc& d);

}  // namespace spindle::config
