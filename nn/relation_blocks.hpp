// What a typed (heterogeneous) stack model's forward pass needs beside the
// untyped one's: each message-passing op reads its layer's sampled block
// restricted to the edges of one of the model's edge types, and only the ops
// the asked node type's answer depends on are run.
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

/// Blocks restricted to one edge type each, made on first use and kept for the pass.
class relation_blocks {
 public:
  /// `relation_of_type[t]`: the model's edge type that graph edge type t is (-1: unread).
  relation_blocks(std::span<const block> blocks, std::span<const int> relation_of_type)
      : blocks_(blocks), relation_of_type_(relation_of_type) {}
  /// Block `layer` with only the edges of the model's edge type `relation`.
  expected<const block*> get(int layer, int relation);

 private:
  struct stored {
    std::vector<std::int64_t> indptr;
    std::vector<std::int32_t> indices;
    block b;
  };
  std::span<const block> blocks_;
  std::span<const int> relation_of_type_;
  std::map<std::pair<int, int>, stored> made_;
};

/// needed[i]: whether op i is on a path to the value `result` (which must be an op's name).
std::vector<bool> ops_needed(const std::vector<config::gnn_op>& ops, const std::string& result);

}  // namespace spindle::nn
