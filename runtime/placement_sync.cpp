#include "runtime/placement_sync.hpp"

#include <caf/scoped_actor.hpp>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "actors/node_actor.hpp"
#include "config/cluster_ranks.hpp"
#include "core/log.hpp"
#include "core/thread_priority.hpp"
#include "features/dataset_placement.hpp"
#include "runtime/peer_rows.hpp"

namespace spindle::runtime {

namespace {

// A plan's inputs as rank 0 publishes them: the FAP (N doubles), then each
// node's home in the plan it replaces (N int32).
struct plan_inputs {
  std::vector<double> fap;
  std::vector<std::int32_t> home;
};
expected<plan_inputs> read_plan_inputs(rank_shard& shard, const std::string& descriptor) {
  const auto n = std::size_t(shard.dataset().num_nodes());
  std::vector<std::byte> blob(n * (sizeof(double) + sizeof(std::int32_t)));
  SPINDLE_TRY(shard.read_blob(descriptor, blob));
  plan_inputs in{std::vector<double>(n), std::vector<std::int32_t>(n)};
  std::memcpy(in.fap.data(), blob.data(), n * sizeof(double));
  std::memcpy(in.home.data(), blob.data() + n * sizeof(double), n * sizeof(std::int32_t));
  return in;
}

// The plan of the epoch the cluster serves while it moves to the target (rank
// 0's "from_*"), rebuilt from its published inputs as every member built it;
// epoch 0's is this node's own (rank 0 compared its checksum at the join).
expected<std::shared_ptr<const features::placement_plan>> serving_plan(
    rank_shard& shard, const member_info& coordinator) {
  if (coordinator.from_epoch == 0) {
    if (auto e = shard.at(0)) return e->plan;
    return make_error(errc::unavailable, "placement epoch 0 is not held here");
  }
  if (coordinator.from_fap.empty())
    return make_error(errc::unavailable, "rank 0 lists no inputs of placement epoch {}",
                      coordinator.from_epoch);
  SPINDLE_ASSIGN_OR_RETURN(auto in, read_plan_inputs(shard, coordinator.from_fap));
  SPINDLE_ASSIGN_OR_RETURN(
      auto plan,
      features::replace_dataset(shard.dataset(),
                                config::with_ranks(shard.topology(), coordinator.from_ranks()),
                                in.fap, in.home));
  return std::make_shared<const features::placement_plan>(std::move(plan));
}

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
  leave_when_done(alive);
}

// A rank asked to leave stops (as on SIGTERM) once the target plan leaves it
// out and every other shard holder reads that plan: no reader needs its rows.
// Whether it built its own (empty) shard of that plan does not matter: a target
// that moved on past the one it built (a drift, another leave) would hold it here.
void placement_sync::leave_when_done(const std::map<int, member_info>& alive) {
  const auto me = alive.find(shard_.rank());
  const auto coord = alive.find(0);
  if (me == alive.end() || !me->second.leaving || coord == alive.end()) return;
  const int target = coord->second.target;
  if (coord->second.target_ranks().holds(shard_.rank()) || coord->second.fap.empty()) return;
  for (const auto& [rank, m] : alive)
    if (rank != shard_.rank() && !m.descriptor.empty() && m.reading < target) return;
  log::info("rank {}: left the cluster: placement epoch {} holds none of its rows and every "
            "member reads it; stopping",
            shard_.rank(), target);
  ::kill(::getpid(), SIGTERM);
}

// Builds and publishes this node's shard of the target epoch.
void placement_sync::catch_up(const member_info& coordinator,
                              const std::map<int, member_info>& alive) {
  const int target = coordinator.target;
  if (target <= shard_.latest().epoch || coordinator.fap.empty()) return;
  if (std::chrono::steady_clock::now() < retry_at_) return;
  const int rank = shard_.rank();
  // A rank that holds no rows yet (it joined) builds only a plan that includes
  // it: an earlier target's inputs may be freed while it reads them. A plan
  // made while its rank was absent (the one before it died) does not.
  if (!shard_.latest().own_rows && !coordinator.target_ranks().holds(rank)) return;
  log::info("rank {}: building its shard of placement epoch {}", rank, target);
  auto in = read_plan_inputs(shard_, coordinator.fap);
  // The rows this node does not hold yet come from their owners' regions: of the
  // epoch it serves (a migration) and of the target itself (peers that built it
  // already: a node restarted after a re-plan, whose epoch 0 its peers freed);
  // then from its own copy; then lent by its peers' own copies (rows only a dead
  // rank's region held). A rank that joined serves no epoch yet: it reads the
  // regions of the epoch the cluster serves, by that epoch's plan rebuilt here.
  auto serving = shard_.latest();
  if (!serving.own_rows && in) {
    auto now = serving_plan(shard_, coordinator);
    if (now) serving = {coordinator.from_epoch, *now, nullptr};
    else in = now.error();
  }
  rank_shard::row_sources from;
  from.owners = [&](const features::placement_plan& next, std::span<const std::int64_t> ids,
                    float* out, std::vector<std::uint8_t>& have) {
    auto now = read_published(shard_, *serving.plan, serving.epoch, alive, ids, out, have);
    auto ahead = read_published(shard_, next, target, alive, ids, out, have);
    return now.is_ok() ? now : ahead;
  };
  from.copies = lent_by_peers(coordinator_, shard_, alive);
  expected<rank_shard::build_report> built =
      in ? expected<rank_shard::build_report>(make_error(errc::internal, "not built"))
         : expected<rank_shard::build_report>(in.error());
  if (in) {
    // At background priority, on a thread of its own: the node's pipelines and
    // doors come first on a shared machine (co-located ranks, a joiner beside
    // them), and the build takes the cores they leave idle.
    std::thread builder([&] {
      lower_to_background_priority();
      built = shard_.build(target, in->fap, in->home, from, coordinator.target_ranks());
    });
    builder.join();
  }
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
