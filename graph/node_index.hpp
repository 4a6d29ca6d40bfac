// A dataset's input ids -> its rows: what a request naming nodes the way the
// user's data does ("100157", "bradshaw97introduction") is resolved with. Built
// from node_names.txt or node_ids.npy (written by prepare when it relabelled);
// a dataset without either uses its row numbers as ids. Read-only once built.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/status.hpp"
#include "graph/dataset.hpp"

namespace spindle::graph {

class node_index {
 public:
  /// Reads the dataset's id files (node_names.txt: one line per row).
  static expected<node_index> build(const dataset& ds);

  /// The row of input id `id`; errors name the id and the dataset.
  expected<std::int64_t> resolve(std::string_view id) const;
  std::size_t size() const { return rows_; }
  /// "node_names.txt", "node_ids.npy" or "row numbers".
  const std::string& source() const { return source_; }

 private:
  std::unordered_map<std::string, std::int64_t> by_name_;
  std::string dataset_, source_;
  std::size_t rows_ = 0;
  bool identity_ = false;  // ids are row numbers
};

}  // namespace spindle::graph
