#include "hps/warm_up.hpp"

#include <algorithm>
#include <chrono>

#include "core/log.hpp"

namespace spindle::hps {

expected<std::vector<warm_up_report>> warm_up(lookup_session& session, persistent_db& pdb,
                                              volatile_db* vdb, std::uint64_t chunk_rows) {
  std::vector<warm_up_report> out;
  for (std::size_t t = 0; t < session.table_count(); ++t) {
    const auto& o = session.table(t);
    const auto t0 = std::chrono::steady_clock::now();
    warm_up_report r{o.name, o.rows, 0, 0, 0};
    const bool into_l1 = session.l1_holds_every_row(t);
    if (!vdb && !into_l1) {
      out.push_back(r);
      continue;
    }
    std::vector<cache_key> keys;
    std::vector<float> values;
    std::vector<std::uint8_t> found;
    for (std::uint64_t first = 0; first < o.rows; first += chunk_rows) {
      const std::uint64_t n = std::min<std::uint64_t>(chunk_rows, o.rows - first);
      keys.resize(n);
      for (std::uint64_t i = 0; i < n; ++i) keys[i] = cache_key(first + i);
      values.assign(n * o.dim, 0.0f);
      found.assign(n, 0);
      SPINDLE_ASSIGN_OR_RETURN(auto got, pdb.lookup(o.name, keys, values, found));
      if (got != n) {  // compact to the rows the PDB holds
        std::size_t w = 0;
        for (std::size_t i = 0; i < n; ++i) {
          if (!found[i]) continue;
          keys[w] = keys[i];
          std::copy_n(values.begin() + std::ptrdiff_t(i * o.dim), o.dim,
                      values.begin() + std::ptrdiff_t(w * o.dim));
          ++w;
        }
        keys.resize(w);
        values.resize(w * o.dim);
      }
      if (vdb) {
        if (auto st = vdb->insert(o.name, o.dim, keys, values); !st)
          return std::move(st).with_context("warm-up of table '" + o.name + "': ");
        r.to_vdb += keys.size();
      }
      if (into_l1) {
        SPINDLE_TRY(session.warm_l1(t, keys, values));
        r.to_l1 += keys.size();
      }
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    log::info("warm-up of table '{}': {} rows into the VDB, {} into the L1 cache, {:.2f} s",
              r.table, r.to_vdb, r.to_l1, r.seconds);  // as each table is done: progress
    out.push_back(r);
  }
  return out;
}

}  // namespace spindle::hps
