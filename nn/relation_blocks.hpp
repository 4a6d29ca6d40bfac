// What a typed (heterogeneous) stack model's forward pass needs beside the
// untyped one's. Each value holds the rows of one node type only (a sampled
// node's row in it is its rank among that type's sampled nodes, so the rows a
// layer's targets keep are still the first ones); each message-passing op reads
// its layer's block restricted to the edges of one edge type, between those
// compact rows; only the ops the asked node type's answer depends on run.
#pragma once

#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "config/model_ops.hpp"
#include "core/status.hpp"
#include "nn/ops.hpp"

namespace spindle::nn {

class typed_layout {
 public:
  /// `row_types[r]`: the model's node type of sampled row r (-1: one it does not
  /// read); `relation_of_type[t]`: the model's edge type graph edge type t is
  /// (-1: unread); `ends[k]`: the model's edge type k's (source, target) node types.
  typed_layout(std::span<const block> blocks, std::span<const int> relation_of_type,
               std::span<const std::int16_t> row_types,
               std::vector<std::pair<int, int>> ends);
  /// Block `layer` restricted to edge type `relation`, its targets and sources
  /// numbered within their node types.
  expected<const block*> get(int layer, int relation);
  /// The sampled rows of node type `type`, in order (their features: its value's rows).
  std::span<const std::int64_t> rows_of(int type) const;

 private:
  struct stored {
    std::vector<std::int64_t> indptr;
    std::vector<std::int32_t> indices;
    block b;
  };
  std::int64_t count(int type, std::int64_t limit) const;  // rows of `type` among the first `limit`
  std::span<const block> blocks_;
  std::span<const int> relation_of_type_;
  std::span<const std::int16_t> row_types_;
  std::vector<std::pair<int, int>> ends_;
  std::vector<std::vector<std::int64_t>> rows_;  // per node type
  std::vector<std::int32_t> rank_;               // per row: its index among its type's rows
  std::map<std::pair<int, int>, stored> made_;
};

/// Each of the first `rows` sampled rows' rank among the rows of its node type
/// (`row_types`; -1 for a row of a type the model does not read): the row's
/// place in its type's values.
std::vector<std::int32_t> typed_row_ranks(std::span<const std::int16_t> row_types,
                                          std::size_t rows);

/// needed[i]: whether op i is on a path to the value `result` (which must be an op's name).
std::vector<bool> ops_needed(const std::vector<config::gnn_op>& ops, const std::string& result);

}  // namespace spindle::nn
