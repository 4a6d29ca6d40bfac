// Secret tokens kept in files: the front door's admin token and the cluster's
// token (members join with it; `cluster-status` needs it). A token file others
// may read or write is refused; a missing one can be created with a random
// token, atomically and with mode 0600 from the start.
#pragma once

#include <string>
#include <string_view>

#include "core/status.hpp"

namespace spindle::runtime {

/// Reads the token in `path` (its first line, at least 16 characters). When the
/// file is absent: with `create`, writes a new random token there (O_EXCL, mode
/// 0600; a concurrent creator's token wins); without, fails naming the file.
/// `what` names the file in errors ("admin token file").
expected<std::string> token_file(const std::string& path, std::string_view what, bool create);

}  // namespace spindle::runtime
