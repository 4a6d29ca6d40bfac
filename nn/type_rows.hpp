// A featureless node type's embedding table read from outside the model (the
// parameter server's tables, wired in where the serve stack is assembled) instead
// of held in its parameters. CAF-free; nn/ knows only this interface.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>

#include "core/status.hpp"

namespace spindle::nn {

/// Writes row ids[i] of a type's table to out[i*in .. (i+1)*in) for every i (ids
/// are checked to lie in the table before the call). Exact or an error: a row it
/// cannot read fails the call naming the type and the id, never a default row.
/// Called from many pipeline threads at once, so it must be thread-safe.
using type_row_reader =
    std::function<status(std::span<const std::int64_t> ids, std::span<float> out)>;

/// Node type name -> the reader of its table. A type listed is not loaded into
/// the model's parameters (its tensor's shape is still checked against model.toml).
using type_row_readers = std::map<std::string, type_row_reader>;

}  // namespace spindle::nn
