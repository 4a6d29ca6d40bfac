// Baselines Quiver §6.5 compares against, behind the same interface:
//  * hash: DGL's default. server = hash(node) mod S; inside the server the row
//    goes to a hashed device with room, else host memory, else disk; a full
//    server passes the row on to the next one. No replication.
//  * degree: PaGraph/AliGraph-like. The highest in-degree rows are cached on
//    every device (replicated); spare host memory replicates the next highest
//    rows on every server; the rest is hash-partitioned over host memory, then disk.
//  * random: a seeded shuffle dealt round-robin over all shards with room.
#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <random>

#include "features/policies/policies.hpp"

namespace spindle::features {
namespace {

using detail::mix64;

std::uint64_t total_capacity(const std::vector<shard_info>& shards) {
  std::uint64_t t = 0;
  for (const auto& s : shards) t += s.capacity_rows;
  return t;
}

std::vector<std::uint64_t> room_of(const std::vector<shard_info>& shards) {
  std::vector<std::uint64_t> room;
  for (const auto& s : shards) room.push_back(s.capacity_rows);
  return room;
}

// The topology's shards for rows of `in.row_bytes`, or the capacity error when
// together they cannot hold every row.
expected<std::vector<shard_info>> shards_holding_all(const config::topology& topo,
                                                     const placement_input& in) {
  const std::uint64_t n = in.fap.size();
  auto shards = enumerate_shards(topo, in.row_bytes);
  if (total_capacity(shards) < n)
    return detail::capacity_error(n, total_capacity(shards), in.row_bytes);
  return shards;
}

// A server's host memory, then its disk: where rows its devices do not hold go.
std::vector<int> backing_of(const detail::server_shards& s) {
  std::vector<int> tiers;
  if (s.host >= 0) tiers.push_back(s.host);
  if (s.disk >= 0) tiers.push_back(s.disk);
  return tiers;
}

bool take(int shard, std::uint64_t node, std::vector<std::uint64_t>& room,
          detail::plan_assembler& out) {
  if (shard < 0 || room[shard] == 0) return false;
  --room[shard];
  out.put(node, shard);
  return true;
}

// Puts `node` on a server chosen by hash, probing on when the server is full.
// `tiers` lists, per server, the shards to try in order; `preferred(server)`
// (optional) names a shard to try first.
bool put_hashed(std::uint64_t node, std::uint64_t seed, const std::vector<std::vector<int>>& tiers,
                std::vector<std::uint64_t>& room, detail::plan_assembler& out,
                const std::function<int(std::size_t)>& preferred = {}) {
  const std::size_t S = tiers.size();
  std::uint64_t h = mix64(node ^ seed);
  for (std::size_t probe = 0; probe < S; ++probe) {
    const std::size_t server = (h + probe) % S;
    if (preferred && take(preferred(server), node, room, out)) return true;
    for (int shard : tiers[server])
      if (take(shard, node, room, out)) return true;
  }
  return false;
}

expected<placement_plan> place_hashed(const config::topology& topo, const placement_input& in) {
  const std::uint64_t n = in.fap.size();
  SPINDLE_ASSIGN_OR_RETURN(auto shards, shards_holding_all(topo, in));
  auto index = detail::index_shards(topo, shards);
  auto room = room_of(shards);
  // Per server: its devices, host memory, disk; the device a row prefers is
  // chosen by a second hash so rows spread over a server's devices.
  std::vector<std::vector<int>> tiers(index.size());
  for (std::size_t s = 0; s < index.size(); ++s) {
    tiers[s] = index[s].devices;
    for (int shard : backing_of(index[s])) tiers[s].push_back(shard);
  }
  detail::plan_assembler out(n, shards);
  for (std::uint64_t v = 0; v < n; ++v) {
    auto preferred = [&](std::size_t s) {
      const auto& dev = index[s].devices;
      return dev.empty() ? -1 : dev[mix64(v + 1) % dev.size()];
    };
    if (!put_hashed(v, in.seed, tiers, room, out, preferred))
      return detail::capacity_error(n, total_capacity(shards), in.row_bytes);
  }
  return std::move(out).finish("hash", in.row_bytes);
}

expected<placement_plan> place_by_degree(const config::topology& topo, const placement_input& in) {
  const std::uint64_t n = in.fap.size();
  if (in.degree.size() != n)
    return make_error(errc::invalid_argument, "degree placement: {} degrees for {} nodes",
                      in.degree.size(), n);
  auto shards = enumerate_shards(topo, in.row_bytes);
  auto index = detail::index_shards(topo, shards);
  std::vector<double> score(in.degree.begin(), in.degree.end());
  auto order = detail::rank_descending(score);
  // Device cache: the top rows on every device (PaGraph).
  std::uint64_t cache = std::numeric_limits<std::uint64_t>::max();
  bool any_device = false;
  for (const auto& s : shards)
    if (s.tier == shard_tier::device) cache = std::min(cache, s.capacity_rows), any_device = true;
  cache = any_device ? std::min(cache, n) : 0;
  detail::plan_assembler out(n, shards);
  for (std::uint64_t r = 0; r < cache; ++r)
    for (std::size_t d = 0; d < shards.size(); ++d)
      if (shards[d].tier == shard_tier::device) out.put(order[r], int(d));
  // Host + disk hold every row not cached; spare room replicates the next rows.
  std::vector<std::uint64_t> room(shards.size(), 0);
  std::uint64_t backing = 0, min_backing = std::numeric_limits<std::uint64_t>::max();
  for (const auto& ss : index) {
    std::uint64_t b = 0;
    if (ss.host >= 0) b += room[ss.host] = shards[ss.host].capacity_rows;
    if (ss.disk >= 0) b += room[ss.disk] = shards[ss.disk].capacity_rows;
    backing += b;
    min_backing = std::min(min_backing, b);
  }
  const std::uint64_t rest = n - cache, S = index.size();
  if (backing < rest) return detail::capacity_error(n, backing + cache, in.row_bytes);
  std::uint64_t replicate = S > 1 ? std::min(min_backing, (backing - rest) / (S - 1)) : 0;
  replicate = std::min(replicate, rest);
  std::vector<std::vector<int>> tiers(S);
  for (std::size_t s = 0; s < S; ++s) tiers[s] = backing_of(index[s]);
  for (std::uint64_t r = cache; r < cache + replicate; ++r)
    for (std::size_t s = 0; s < S; ++s) {
      int shard = room[tiers[s][0]] > 0 ? tiers[s][0] : tiers[s].back();
      --room[shard];
      out.put(order[r], shard);
    }
  for (std::uint64_t r = cache + replicate; r < n; ++r)
    if (!put_hashed(order[r], in.seed, tiers, room, out))
      return detail::capacity_error(n, backing + cache, in.row_bytes);
  return std::move(out).finish("degree", in.row_bytes);
}

expected<placement_plan> place_randomly(const config::topology& topo, const placement_input& in) {
  const std::uint64_t n = in.fap.size();
  SPINDLE_ASSIGN_OR_RETURN(auto shards, shards_holding_all(topo, in));
  std::vector<std::uint64_t> order(n);
  std::iota(order.begin(), order.end(), std::uint64_t{0});
  std::mt19937_64 rng(in.seed);
  std::shuffle(order.begin(), order.end(), rng);
  auto room = room_of(shards);
  detail::plan_assembler out(n, shards);
  std::size_t next = 0;
  for (std::uint64_t v : order) {
    while (room[next] == 0) next = (next + 1) % shards.size();
    --room[next];
    out.put(v, int(next));
    next = (next + 1) % shards.size();
  }
  return std::move(out).finish("random", in.row_bytes);
}

// A baseline behind the policy interface: its name and its placing function.
class baseline_policy final : public placement_policy {
 public:
  using place_fn = expected<placement_plan> (*)(const config::topology&, const placement_input&);
  baseline_policy(std::string_view name, place_fn place) : name_(name), place_(place) {}
  std::string_view name() const override { return name_; }
  expected<placement_plan> place(const config::topology& topo,
                                 const placement_input& in) const override {
    return place_(topo, in);
  }

 private:
  std::string_view name_;
  place_fn place_;
};

}  // namespace

std::unique_ptr<placement_policy> make_hash_policy() {
  return std::make_unique<baseline_policy>("hash", place_hashed);
}
std::unique_ptr<placement_policy> make_degree_policy() {
  return std::make_unique<baseline_policy>("degree", place_by_degree);
}
std::unique_ptr<placement_policy> make_random_policy() {
  return std::make_unique<baseline_policy>("random", place_randomly);
}

}  // namespace spindle::features
