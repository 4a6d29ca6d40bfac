// Helpers shared by the graph tests: temporary directories and small graphs.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "graph/edge_list.hpp"
#include "graph/rmat.hpp"

namespace spindle::graph::testing {

/// A fresh directory under the system temp dir, unique per process and name;
/// the process's folder of them is removed when the test binary exits (each
/// run left up to 350 MB behind before).
inline std::string temp_dir(const std::string& name) {
  const auto root = std::filesystem::temp_directory_path() /
                    ("spindle_graph_test_" + std::to_string(::getpid()));
  static const struct sweeper {
    std::filesystem::path root;
    ~sweeper() {
      std::error_code ignored;
      std::filesystem::remove_all(root, ignored);
    }
  } swept{root};
  auto dir = root / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// Builds a CSR from (src, dst) pairs over n nodes, keeping the edges as given.
inline csr_graph make_graph(std::int64_t n, std::vector<std::pair<std::int64_t, std::int64_t>> edges) {
  edge_list e;
  for (auto [a, b] : edges) {
    e.src.push_back(a);
    e.dst.push_back(b);
  }
  build_options o;
  o.relabel = relabel_mode::never;
  o.num_nodes = n;
  return build_csr(std::move(e), o).value().csr;
}

/// R-MAT graph (seed 1) with ids kept as generated; undirected by default.
inline csr_graph rmat_graph(int scale, int edge_factor, bool undirected = true) {
  thread_pool pool(1);
  rmat_options r;
  r.scale = scale;
  r.edge_factor = edge_factor;
  build_options b;
  b.undirected = undirected;
  b.relabel = relabel_mode::never;
  b.num_nodes = std::int64_t{1} << scale;
  return build_csr(generate_rmat(r, pool).value(), b).value().csr;
}

inline std::string shared_data(const std::string& rel) {
  return std::string(SPINDLE_SHARED_DATA_DIR) + "/" + rel;
}

}  // namespace spindle::graph::testing
