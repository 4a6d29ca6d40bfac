// The cluster's member list as people read it: one row per rank (alive, ready,
// placement epoch, ...) instead of the raw JSON with its long UCX descriptors
// and bridge addresses (`--json` keeps those for scripts).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace spindle::apps {

/// A table of `members` (the coordinator's JSON array, or an object holding it
/// under "members"); fields a member lacks print as "-".
std::string members_table(const nlohmann::json& members);

}  // namespace spindle::apps
