#include "runtime/peer_rows.hpp"

#include <algorithm>
#include <caf/scoped_actor.hpp>
#include <cstring>

#include "core/batched_read.hpp"
#include "features/feature_gather.hpp"
#include "transport/ucx/ucx.hpp"

namespace spindle::runtime {

namespace ucx = transport::ucx;

namespace {

// The regions of `epoch` the live peers publish, each shard of theirs as a window.
struct published {
  std::vector<std::unique_ptr<ucx::remote_region>> regions;
  std::vector<std::unique_ptr<offset_reader>> windows;
  std::vector<features::shard_access> access;  // by shard; empty where not published
  status problem = status::ok();               // a peer that could not be attached
};

void attach_peer(published& p, ucx::worker& w, const features::placement_plan& plan, int server,
                 const std::string& text, std::uint32_t dim) {
  auto d = ucx::region_descriptor::decode(text);
  auto region = d ? ucx::remote_region::attach(w, *d)
                  : expected<std::unique_ptr<ucx::remote_region>>(d.error());
  auto layout = region_layout(plan, server, dim);
  if (!region || !layout) {
    p.problem = region ? layout.error() : region.error();
    return;
  }
  for (const auto& slot : *layout) {
    if (slot.offset + slot.bytes > (*region)->size()) {
      p.problem = make_error(errc::corrupt_data,
                             "shard {} of rank {} lies outside the {} bytes it published",
                             slot.shard, server, (*region)->size());
      continue;
    }
    p.windows.push_back(std::make_unique<offset_reader>(**region, slot.offset, slot.bytes));
    p.access[std::size_t(slot.shard)] = {nullptr, p.windows.back().get(), 1.0};
  }
  p.regions.push_back(std::move(*region));
}

}  // namespace

status read_published(const rank_shard& shard, const features::placement_plan& plan, int epoch,
                      const std::map<int, member_info>& alive, std::span<const std::int64_t> ids,
                      float* out, std::vector<std::uint8_t>& have) {
  const auto dim = std::uint32_t(shard.dataset().feature_dim());
  std::map<int, std::string> peers;
  for (const auto& [rank, m] : alive)
    if (rank != shard.rank() && !descriptor_for(m, epoch).empty())
      peers[rank] = descriptor_for(m, epoch);
  if (peers.empty())
    return make_error(errc::unavailable, "no live peer publishes placement epoch {}", epoch);
  SPINDLE_ASSIGN_OR_RETURN(auto ctx, ucx::context::create());
  SPINDLE_ASSIGN_OR_RETURN(auto w, ucx::worker::create(ctx));
  published p;  // after the worker: released first
  p.access.resize(plan.shards.size());
  for (const auto& [rank, text] : peers) attach_peer(p, w, plan, rank, text, dim);
  std::vector<std::int64_t> readable;
  std::vector<std::size_t> where;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (have[i]) continue;
    for (const auto& o : plan.lookup.locate(std::uint64_t(ids[i])).owners)
      if (p.access[o.shard].remote) {
        readable.push_back(ids[i]);
        where.push_back(i);
        break;
      }
  }
  if (readable.empty()) return p.problem;
  features::feature_gatherer g(plan.lookup, dim * 4, p.access);
  std::vector<float> rows(readable.size() * dim);
  SPINDLE_TRY(g.gather(readable, {reinterpret_cast<std::byte*>(rows.data()), rows.size() * 4})
                  .error_or_ok());
  for (std::size_t k = 0; k < readable.size(); ++k) {
    std::memcpy(out + where[k] * dim, rows.data() + k * dim, std::size_t(dim) * 4);
    have[where[k]] = 1;
  }
  return status::ok();
}

namespace {

// Asks rank `peer` (through the coordinator) to lend the rows of `ids`; copies
// those it lent to their places in `out` and frees the loan.
status borrow(const caf::actor& coordinator, rank_shard& shard, int peer,
              std::span<const std::int64_t> ids, std::span<const std::size_t> where, float* out,
              std::vector<std::uint8_t>& have) {
  const std::size_t dim = std::size_t(shard.dataset().feature_dim());
  caf::scoped_actor self{coordinator->home_system()};
  // (rows_atom, me, peer, ids) -> (descriptor, held); empty ids free the loan.
  auto ask = [&](const std::string& what, std::string& descriptor, std::string& held) {
    status st = status::ok();
    self->request(coordinator, std::chrono::seconds(20), actors::rows_atom::value, shard.rank(),
                  peer, what)
        .receive(
            [&](std::string& d, std::string& h) { descriptor = std::move(d), held = std::move(h); },
            [&](caf::error& e) {
              st = make_error(errc::unavailable, "rank {} lent no rows: {}", peer, to_string(e));
            });
    return st;
  };
  std::string descriptor, held;
  SPINDLE_TRY(ask(std::string(reinterpret_cast<const char*>(ids.data()), ids.size_bytes()),
                  descriptor, held));
  status st = status::ok();
  if (held.size() != ids.size())
    st = make_error(errc::corrupt_data, "rank {} answered {} flags for {} rows", peer, held.size(),
                    ids.size());
  const auto lent = std::size_t(std::count(held.begin(), held.end(), '\1'));
  std::vector<float> rows(lent * dim);
  if (st && lent > 0)
    st = shard.read_blob(descriptor, {reinterpret_cast<std::byte*>(rows.data()), rows.size() * 4});
  std::string none, freed;
  (void)ask(std::string(), none, freed);  // frees the loan; a failure leaves it until the next
  if (!st) return st;
  for (std::size_t i = 0, k = 0; i < ids.size(); ++i) {
    if (held[i] != 1) continue;
    std::memcpy(out + where[i] * dim, rows.data() + k++ * dim, dim * 4);
    have[where[i]] = 1;
  }
  return status::ok();
}

}  // namespace

rank_shard::row_fetch lent_by_peers(caf::actor coordinator, rank_shard& shard,
                                    std::map<int, member_info> alive) {
  return [coordinator, &shard, alive](const features::placement_plan&,
                                      std::span<const std::int64_t> ids, float* out,
                                      std::vector<std::uint8_t>& have) -> status {
    // At most 16 MiB of rows per loan.
    const auto row_bytes = std::size_t(shard.dataset().feature_dim()) * sizeof(float);
    const std::size_t chunk = std::max<std::size_t>(1, (std::size_t(16) << 20) / row_bytes);
    status last = make_error(errc::unavailable, "no live peer holds a copy of the dataset");
    bool asked = false;
    for (const auto& [rank, m] : alive) {
      if (rank == shard.rank() || m.descriptor.empty()) continue;  // no dataset there
      std::vector<std::int64_t> missing;
      std::vector<std::size_t> where;
      for (std::size_t i = 0; i < ids.size(); ++i)
        if (!have[i]) missing.push_back(ids[i]), where.push_back(i);
      if (missing.empty()) break;
      for (std::size_t at = 0; at < missing.size(); at += chunk) {
        const std::size_t n = std::min(chunk, missing.size() - at);
        auto st = borrow(coordinator, shard, rank, std::span(missing).subspan(at, n),
                         std::span(where).subspan(at, n), out, have);
        if (!st) {
          last = st;
          break;
        }
        asked = true;
      }
    }
    return asked ? status::ok() : last;
  };
}

actors::lend_fn lend_hook(rank_shard& shard) {
  return
      [&shard](int to, const std::string& bytes) -> expected<std::pair<std::string, std::string>> {
        if (bytes.size() % sizeof(std::int64_t) != 0)
          return make_error(errc::invalid_argument,
                            "rows asked by rank {}: {} bytes are not node ids", to, bytes.size());
        std::vector<std::int64_t> ids(bytes.size() / sizeof(std::int64_t));
        std::memcpy(ids.data(), bytes.data(), bytes.size());
        SPINDLE_ASSIGN_OR_RETURN(auto lent, shard.lend(to, ids));
        return std::make_pair(std::move(lent.descriptor),
                              std::string(lent.held.begin(), lent.held.end()));
      };
}

}  // namespace spindle::runtime
