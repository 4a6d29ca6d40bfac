// Reading one array out of a NumPy .npz (np.savez / np.savez_compressed, what
// PyG and OGB exports use): a zip of .npy members, stored or deflated, zip64
// extra fields allowed. The member is written to a temporary .npy file so the
// .npy loaders (which map files) read it unchanged.
#pragma once

#include <string>
#include <vector>

#include "core/status.hpp"

namespace spindle {

/// The names of the arrays in `path` (member names without ".npy").
expected<std::vector<std::string>> npz_arrays(const std::string& path);

/// Extracts array `name` of `path` to a new temporary .npy file and returns its
/// path (the caller removes it). Errors name the archive and, for a missing
/// array, the arrays it holds.
expected<std::string> extract_npz_array(const std::string& path, const std::string& name);

}  // namespace spindle
