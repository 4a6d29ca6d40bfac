#include "runtime/placement_sync.hpp"

#include <caf/scoped_actor.hpp>

#include <cstring>

#include "actors/node_actor.hpp"
#include "core/log.hpp"

namespace spindle::runtime {

namespace {

// Control messages go out from an actor of this process, not anonymously: the
// coordinator takes a rank's messages only from the process that joined as that
// rank with the cluster token.
template <class... Ts>
void send_as_member(const caf::actor& to, Ts&&... xs) {
  caf::scoped_actor self{to->home_system()};
  self->send(to, std::forward<Ts>(xs)...);
}

}  // namespace

placement_sync::placement_sync(caf::actor coordinator, rank_shard& shard)
    : coordinator_(std::move(coordinator)), shard_(shard) {}

void placement_sync::poll(const std::map<int, member_info>& alive) {
  if (auto it = alive.find(0); it != alive.end()) catch_up(it->second, alive);
  report_reading();
  retire(alive);
}

// Builds and publishes this node's shard of the target epoch.
void placement_sync::catch_up(const member_info& coordinator,
                              const std::map<int, member_info>& alive) {
  const int target = coordinator.target;
  if (target <= shard_.latest().epoch || coordinator.fap.empty()) return;
  if (std::chrono::steady_clock::now() < retry_at_) return;
  const int rank = shard_.rank();
  log::info("rank {}: building its shard of placement epoch {}", rank, target);
  // The blob is the target's FAP (N doubles) then the homes it keeps (N int32).
  const auto n = std::size_t(shard_.dataset().num_nodes());
  std::vector<std::byte> blob(n * (sizeof(double) + sizeof(std::int32_t)));
  auto st = shard_.read_blob(coordinator.fap, blob);
  std::vector<double> fap(n);
  std::vector<std::int32_t> home(n);
  std::memcpy(fap.data(), blob.data(), n * sizeof(double));
  std::memcpy(home.data(), blob.data() + n * sizeof(double), n * sizeof(std::int32_t));
  // A reader of the epoch being served, for the rows this node does not hold yet:
  // they come from their current owners (one-sided gets), not from a local copy.
  member_view view;
  view.update(alive);
  auto reader = cluster_features::create(shard_, view, &alive);
  if (!reader)
    log::warn("rank {}: no reader of placement epoch {} for the migration: {}", rank,
              shard_.latest().epoch, reader.error().to_string());
  const rank_shard::row_fetch fetch = reader ? (*reader)->source() : rank_shard::row_fetch{};
  expected<rank_shard::build_report> built =
      st.is_ok() ? shard_.build(target, fap, home, fetch) : expected<rank_shard::build_report>(st);
  if (!built) {
    log::error("rank {}: placement epoch {} failed (retrying in 1 s): {}", rank, target,
               built.error().to_string());
    retry_at_ = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    return;
  }
  log::info(
      "rank {}: shard of placement epoch {} ready: {} rows ({} kept, {} fetched from their "
      "owners, {} from its own copy), {} rows moved in the cluster, {:.3f} s",
      rank, target, built->rows, built->kept, built->fetched, built->from_disk, built->moved,
      built->seconds);
  send_as_member(coordinator_, actors::shard_atom::value, rank, target, shard_.descriptor(target));
}

void placement_sync::report_reading() {
  auto* reader = reader_.load();
  if (reader && reader->reading_epoch() < shard_.latest().epoch) reader->refresh();
  const int reading = reader ? reader->reading_epoch() : shard_.latest().epoch;
  if (reading == reported_) return;
  send_as_member(coordinator_, actors::reading_atom::value, shard_.rank(), reading);
  reported_ = reading;
}

// Frees the shards of epochs no live member reads any more.
void placement_sync::retire(const std::map<int, member_info>& alive) {
  const int latest = shard_.latest().epoch;
  if (latest == 0) return;
  const auto mine = alive.find(shard_.rank());
  if (mine == alive.end() || mine->second.epoch != latest) return;  // not published yet
  for (const auto& [rank, m] : alive)
    if (!m.descriptor.empty() && m.reading < latest) return;  // nodes without a shard read none
  for (int e = 0; e < latest; ++e) {
    if (!shard_.at(e)) continue;
    shard_.retire_before(e + 1);
    send_as_member(coordinator_, actors::retire_atom::value, shard_.rank(), e);
    log::info("rank {}: every member reads placement epoch {}: freed its epoch {} shard",
              shard_.rank(), latest, e);
  }
}

}  // namespace spindle::runtime
