#include "runtime/placement_sync.hpp"

#include <caf/scoped_actor.hpp>
#include <cstring>

#include "actors/node_actor.hpp"
#include "core/log.hpp"
#include "runtime/peer_rows.hpp"

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
  // The rows this node does not hold yet come from their owners' regions: of the
  // epoch it serves (a migration) and of the target itself (peers that built it
  // already: a node restarted after a re-plan, whose epoch 0 its peers freed);
  // then from its own copy; then lent by its peers' own copies (rows only a dead
  // rank's region held).
  const auto serving = shard_.latest();
  rank_shard::row_sources from;
  from.owners = [&](const features::placement_plan& next, std::span<const std::int64_t> ids,
                    float* out, std::vector<std::uint8_t>& have) {
    auto now = read_published(shard_, *serving.plan, serving.epoch, alive, ids, out, have);
    auto ahead = read_published(shard_, next, target, alive, ids, out, have);
    return now.is_ok() ? now : ahead;
  };
  from.copies = lent_by_peers(coordinator_, shard_, alive);
  expected<rank_shard::build_report> built =
      st.is_ok() ? shard_.build(target, fap, home, from) : expected<rank_shard::build_report>(st);
  if (!built) {
    problem_ = fmt::format("placement epoch {} failed: {}", target, built.error().to_string());
    log::error("rank {}: {} (retrying in 1 s)", rank, problem_);
    retry_at_ = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    return;
  }
  problem_.clear();
  log::info(
      "rank {}: shard of placement epoch {} ready: {} rows ({} kept, {} fetched from their "
      "owners, {} from its own copy, {} lent by peers' copies), {} rows moved in the cluster, "
      "{:.3f} s",
      rank, target, built->rows, built->kept, built->fetched, built->from_disk, built->lent,
      built->moved, built->seconds);
  send_as_member(coordinator_, actors::shard_atom::value, rank, target, shard_.descriptor(target));
}

void placement_sync::report_reading() {
  auto* reader = reader_.load();
  if (reader && reader->reading_epoch() < shard_.latest().epoch) reader->refresh();
  const int reading = reader ? reader->reading_epoch() : shard_.latest().epoch;
  std::string problem = problem_;
  if (problem.empty() && reader) problem = reader->problem();
  if (reading == reported_ && problem == reported_problem_) return;
  send_as_member(coordinator_, actors::reading_atom::value, shard_.rank(), reading, problem);
  reported_ = reading;
  reported_problem_ = std::move(problem);
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
