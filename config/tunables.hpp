// Every live tunable a server takes (Admin setTunable, `spindle shell`'s `set`),
// in one table: the gateway names them from it when refusing an unknown one,
// and the shell's help prints it, so the two cannot drift apart.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace spindle::config {

/// Which models a tunable applies to.
enum class tunable_scope { gnn, cluster, rec, parameter_server };

struct tunable_doc {
  std::string_view name;
  tunable_scope scope;
  std::string_view values;  // what it takes
  std::string_view what;    // what it changes
};

/// The table, in the order the shell's help lists it.
const std::vector<tunable_doc>& tunables();

/// The names of one scope, comma-separated (for error messages).
std::string tunable_names(tunable_scope scope);

/// The shell's help section: one line per tunable, grouped by scope.
std::string tunables_help();

}  // namespace spindle::config
