#include "runtime/cluster_serving.hpp"

#include <fmt/ranges.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "actors/batcher_actor.hpp"
#include "actors/load_client.hpp"
#include "actors/node_actor.hpp"
#include "actors/pipeline_actor.hpp"
#include "actors/remote_pipeline.hpp"
#include "actors/router_actor.hpp"
#include "config/cluster_ranks.hpp"
#include "core/checksum.hpp"
#include "core/log.hpp"
#include "core/signals.hpp"
#include "core/text_file.hpp"
#include "features/access_stats.hpp"
#include "features/dataset_placement.hpp"
#include "features/feature_shard.hpp"
#include "graph/metrics.hpp"
#include "nn/model.hpp"
#include "runtime/cluster_features.hpp"
#include "runtime/cluster_queue.hpp"
#include "runtime/member_watch.hpp"
#include "runtime/serving_assets.hpp"
#include "serving/gnn_pipeline.hpp"
#include "serving/psgs_calibrate.hpp"
#include "transport/ucx/progress_loop.hpp"

namespace spindle::runtime {
namespace {

namespace ucx = transport::ucx;

// Polls the coordinator until `done(members)` holds; fails naming `what` after 60 s.
expected<std::map<int, member_info>> wait_members(
    caf::actor_system& sys, const caf::actor& coord, const std::string& token,
    std::string_view what, const std::function<bool(const std::map<int, member_info>&)>& done) {
  for (int i = 0; i < 600; ++i) {
    if (stop_signal_pending())  // SIGTERM from launch, mpirun or Kubernetes: stop now
      return make_error(errc::unavailable, "stopped by a signal while waiting: {}", what);
    SPINDLE_ASSIGN_OR_RETURN(auto m, live_members(sys, coord, token));
    if (done(m)) return m;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return make_error(errc::unavailable, "{} within 60 s", what);
}

struct member_serving_impl final : member_serving {
  caf::actor_system* sys = nullptr;
  const graph::dataset* ds = nullptr;
  node_pipelines config;
  actors::batcher_actor batcher;  // the member's own front door's, when it has one
  placement_sync* sync = nullptr;
  std::unique_ptr<serving_assets> assets;
  std::unique_ptr<cluster_features> features;
  std::vector<actors::pipeline_actor> pipelines;
  ~member_serving_impl() override {
    sync->set_reader(nullptr);
    stop_and_wait(*sys, batcher);
    for (const auto& p : pipelines)
      stop_and_wait(*sys, p);  // they read `features` and `assets` while they run
  }
  actors::gnn_model_binding door(std::string name, serving::admission_options admission) override {
    if (!batcher) {
      const auto* d = ds;
      batcher = actors::spawn_batcher(*sys, pipelines, config.batch, assets->router,
                                      [d](const serving::gnn_request& r) { return summed_psgs(*d, r); });
    }
    actors::gnn_model_binding b{name.empty() ? assets->model->desc().name : std::move(name),
                                batcher,
                                ds,
                                assets->model.get(),
                                assets->router,
                                config.batch,
                                admission};
    b.cluster = true;
    b.pinned = true;
    b.device = assets->device.get();
    const auto* f = features.get();
    b.feature_rows = [f] { return std::make_pair(f->local_rows(), f->remote_rows()); };
    b.type_tables = assets->type_tables;
    return b;
  }
};

// Loads a calibration and routes by it; a batch also closes once its summed
// PSGS passes the routing point (Quiver §4.2.2).
status use_calibration(serving_assets& a, serving::batch_policy& policy, const std::string& path,
                       serving::routing_policy routing) {
  SPINDLE_ASSIGN_OR_RETURN(auto text, read_text_file(path, "calibration"));
  SPINDLE_ASSIGN_OR_RETURN(auto c, serving::psgs_calibration::from_json(text, path));
  a.router = std::make_shared<serving::psgs_router>(std::move(c), routing);
  policy.psgs_threshold = actors::batch_close_threshold(a.router->threshold());
  return status::ok();
}

}  // namespace

expected<std::unique_ptr<member_serving>> start_member_serving(rank_context node,
                                                               caf::actor member_actor,
                                                               const actors::bridge_handle& bridge,
                                                               const std::string& model_dir,
                                                               const node_pipelines& p) {
  auto m = std::make_unique<member_serving_impl>();
  m->sys = &node.sys;
  m->ds = &node.shard.dataset();
  m->config = p;
  m->sync = &node.sync;
  SPINDLE_ASSIGN_OR_RETURN(m->assets, load_assets(model_dir, node.shard.dataset(), p));
  auto& a = *m->assets;
  auto& shard = node.shard;
  SPINDLE_ASSIGN_OR_RETURN(
      auto members, wait_members(node.sys, node.coordinator, node.token,
                                 "not every shard owner published its region", [&](const auto& ms) {
                                   return cluster_features::readable(shard, ms);
                                 }));
  node.view.update(members);
  if (p.calibrate)
    SPINDLE_TRY(calibrate_over_cluster(a, m->config.batch, shard, node.view, members, p));
  if (!p.calibration.empty())  // routes this member's own door
    SPINDLE_TRY(use_calibration(a, m->config.batch, p.calibration, p.routing));
  // From the list seen readable: the watcher may have put an older one in the view since.
  SPINDLE_TRY(fill_device_rows(a, shard, node.view, members));
  SPINDLE_ASSIGN_OR_RETURN(m->features, cluster_features::create(shard, node.view, &members));
  node.sync.set_reader(m->features.get());
  SPINDLE_ASSIGN_OR_RETURN(
      m->pipelines, spawn_pipelines(node.sys, shard.dataset(), a, *m->features, p.pipelines));
  for (std::size_t i = 0; i < m->pipelines.size(); ++i)
    caf::anon_send(bridge.actor, actors::register_atom::value,
                   actors::pipeline_target_name(int(i)), caf::actor_cast<caf::actor>(m->pipelines[i]));
  caf::anon_send(member_actor, actors::ready_atom::value, bridge.address, int(m->pipelines.size()));
  log::info("rank {}: {} pipeline{} ready for the coordinator's batches", shard.rank(),
            m->pipelines.size(), m->pipelines.size() == 1 ? "" : "s");
  return std::unique_ptr<member_serving>(std::move(m));
}

struct cluster_gnn::parts {
  rank_context node;
  std::unique_ptr<serving_assets> assets;
  std::shared_ptr<const features::placement_plan> first_plan;  // epoch 0, for comparison
  std::unique_ptr<cluster_features> features;
  std::vector<actors::pipeline_actor> pipelines;  // this node's first, then the members' stand-ins
  std::size_t local = 0;              // how many of `pipelines` run here
  actors::batcher_actor batcher;
  actors::router_actor router;
  actors::placement_actor placement;
  serving::batch_policy policy;
  std::unique_ptr<cluster_queue> queue;  // which members' pipelines the batcher feeds
  std::uint64_t listener = 0;
  std::size_t members = 0;  // members whose pipelines it fed at start
  explicit parts(rank_context n) : node(n) {}
};

cluster_gnn::cluster_gnn(std::unique_ptr<parts> p) : p_(std::move(p)) {}

cluster_gnn::~cluster_gnn() {
  if (p_->listener) p_->node.watch.remove(p_->listener);
  p_->node.sync.set_reader(nullptr);
  caf::anon_send_exit(p_->placement, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(p_->router, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(p_->batcher, caf::exit_reason::user_shutdown);
  p_->queue.reset();  // ends the remote stand-ins
  for (std::size_t i = 0; i < p_->local; ++i)
    stop_and_wait(p_->node.sys, p_->pipelines[i]);  // they read `features`
}

namespace {

// The placement actor's hooks: this pipeline's accesses (a sample of the
// cluster's: it takes batches from the shared queue like every pipeline) and
// the node shard, which publishes the observed FAP for the others to read.
actors::placement_hooks placement_hooks_of(const cluster_features& f, rank_shard& shard,
                                           const member_view& view) {
  actors::placement_hooks h;
  h.observe = [&f] { return std::make_pair(f.accesses().snapshot(), f.accesses().requests()); };
  // The ranks the coordinator lists for the next plan (joins and leaves change them).
  h.ranks = [&view] {
    const auto ms = view.snapshot();
    const auto it = ms.find(0);
    return it == ms.end() ? config::plan_ranks{} : it->second.wanted_ranks();
  };
  // The blob: the FAP (N doubles), then each node's home in the plan being
  // replaced (N int32), so every node builds the same next plan.
  h.publish = [&shard](int epoch, const std::vector<double>& fap,
                       config::plan_ranks ranks) -> expected<std::string> {
    const auto now = shard.latest();
    if (now.epoch != epoch - 1)
      return make_error(errc::unavailable, "placement epoch {} is not applied here yet", epoch - 1);
    auto home = features::home_servers(*now.plan);
    for (auto& h : home)  // a rank leaving or gone: its rows have no home to stay on
      if (!ranks.holds(h)) h = -1;
    std::vector<std::byte> blob(fap.size() * sizeof(double) + home.size() * sizeof(std::int32_t));
    std::memcpy(blob.data(), fap.data(), fap.size() * sizeof(double));
    std::memcpy(blob.data() + fap.size() * sizeof(double), home.data(),
                home.size() * sizeof(std::int32_t));
    return shard.publish_blob(epoch, blob);
  };
  return h;
}

// The placement's options with the plan's ranks at start (the TOML's).
actors::placement_options placement_options_of(actors::placement_options o,
                                               const rank_shard& shard) {
  o.servers = int(shard.topology().servers.size());
  return o;
}

// The row-ownership table the router reports: the placement epoch this node
// holds and, per shard, its server, tier and rows.
std::function<std::string()> owners_json(const rank_shard& shard) {
  return [&shard] {
    const auto e = shard.latest();
    nlohmann::json shards = nlohmann::json::array();
    const auto rows = e.plan->shard_rows();
    for (std::size_t i = 0; i < e.plan->shards.size(); ++i)
      shards.push_back({{"server", e.plan->shards[i].server},
                        {"tier", std::string(features::to_string(e.plan->shards[i].tier))},
                        {"rows", rows[i]}});
    return nlohmann::json{
        {"epoch", e.epoch}, {"replicated_rows", e.plan->replicated_rows}, {"shards", shards}}
        .dump();
  };
}

}  // namespace

expected<std::unique_ptr<cluster_gnn>> cluster_gnn::start(rank_context node,
                                                          const actors::bridge_handle& bridge,
                                                          const cluster_gnn_options& o) {
  auto p = std::make_unique<parts>(node);
  p->policy = o.serving.batch;
  SPINDLE_ASSIGN_OR_RETURN(p->assets, load_assets(o.model_dir, node.shard.dataset(), o.serving));
  auto& a = *p->assets;
  auto& sys = node.sys;
  const auto& ds = node.shard.dataset();
  p->first_plan = node.shard.latest().plan;
  if (!o.calibration.empty()) SPINDLE_TRY(use_calibration(a, p->policy, o.calibration, o.policy));
  auto ready = [&](const std::map<int, member_info>& ms) {
    int n = 0;
    for (const auto& [rank, m] : ms) n += rank > 0 && m.ready;
    return n >= o.expect && cluster_features::readable(node.shard, ms);
  };
  SPINDLE_ASSIGN_OR_RETURN(
      auto members, wait_members(sys, node.coordinator, node.token,
                                 fmt::format("fewer than {} members were ready", o.expect), ready));
  node.view.update(members);
  if (o.serving.calibrate)
    SPINDLE_TRY(calibrate_over_cluster(a, p->policy, node.shard, node.view, members, o.serving));
  SPINDLE_TRY(fill_device_rows(a, node.shard, node.view, members));
  SPINDLE_ASSIGN_OR_RETURN(p->features, cluster_features::create(node.shard, node.view, &members));
  node.sync.set_reader(p->features.get());
  SPINDLE_ASSIGN_OR_RETURN(p->pipelines,
                           spawn_pipelines(sys, ds, a, *p->features, o.serving.pipelines));
  p->local = p->pipelines.size();
  const auto* dsp = &ds;
  auto psgs_of = [dsp](const serving::gnn_request& r) { return serving::summed_psgs(*dsp, r); };
  // One stand-in per pipeline a member said it runs when ready (as many as this
  // node if it said none); members that serve later (a rank that joined, one back
  // from the dead) are added as they do.
  p->queue = std::make_unique<cluster_queue>(sys, bridge.actor, int(p->local), a.router, psgs_of);
  auto [stand_ins, of_rank] = p->queue->start(members);
  std::vector<std::int32_t> ranks(p->local, 0);
  ranks.insert(ranks.end(), of_rank.begin(), of_rank.end());
  p->members = std::set<std::int32_t>(of_rank.begin(), of_rank.end()).size();
  p->pipelines.insert(p->pipelines.end(), stand_ins.begin(), stand_ins.end());
  p->batcher = actors::spawn_batcher(sys, p->pipelines, p->policy, a.router, psgs_of, ranks);
  p->queue->attach(p->batcher);
  // Every poll, not only changes: a change the watch saw between `members` and
  // this registration is applied at its first poll (the roster does nothing when
  // the list is the one it last saw).
  p->listener = node.watch.on_poll(
      [q = p->queue.get()](const std::map<int, member_info>& now) { q->on_change(now); });
  p->router = actors::spawn_router(sys, a.router, p->batcher, owners_json(node.shard));
  p->placement = actors::spawn_placement(sys, node.coordinator,
                                         std::vector<double>(ds.fap().begin(), ds.fap().end()),
                                         placement_options_of(o.placement, node.shard),
                                         placement_hooks_of(*p->features, node.shard, node.view));
  return std::unique_ptr<cluster_gnn>(new cluster_gnn(std::move(p)));
}

actors::gnn_model_binding cluster_gnn::binding(std::string name,
                                               serving::admission_options admission) const {
  auto& a = *p_->assets;
  actors::gnn_model_binding b{name.empty() ? a.model->desc().name : std::move(name),
                              p_->batcher,
                              &p_->node.shard.dataset(),
                              a.model.get(),
                              a.router,
                              p_->policy,
                              admission};
  b.placement = p_->placement;
  b.routing = p_->router;
  b.cluster = true;
  b.pinned = true;
  b.device = a.device.get();
  if (const auto* f = p_->features.get())
    b.feature_rows = [f] { return std::make_pair(f->local_rows(), f->remote_rows()); };
  b.type_tables = a.type_tables;
  return b;
}

std::string cluster_gnn::members_json() const {
  caf::scoped_actor self{p_->node.sys};
  std::string out = "[]";
  self->request(p_->node.coordinator, std::chrono::seconds(2), actors::status_atom::value)
      .receive([&](const std::string& text) { out = text; }, [](caf::error&) {});
  return out;
}

namespace {

// Every live shard holder reads the target epoch and has freed its old shard.
bool placement_applied(const std::map<int, member_info>& ms, int target) {
  for (const auto& [rank, m] : ms)
    if (!m.descriptor.empty() && (m.epoch != target || m.reading != target || m.old_epoch >= 0))
      return false;
  return true;
}

// " (rank R: problem; ...)" for the ranks that report one, else "".
std::string placement_problems(const std::map<int, member_info>& ms) {
  std::string out;
  for (const auto& [rank, m] : ms)
    if (!m.problem.empty())
      out += fmt::format("{}rank {}: {}", out.empty() ? " (" : "; ", rank, m.problem);
  return out.empty() ? out : out + ")";
}

}  // namespace

// Waits (30 s at most) for the placement's last re-plan to be applied on every
// node, then prints it: "placement epoch E applied ..." or "... not applied".
void cluster_gnn::report_placement() {
  auto& sys = p_->node.sys;
  actors::placement_stats st;
  {
    caf::scoped_actor self{sys};
    self->request(p_->placement, std::chrono::seconds(5), caf::get_atom::value)
        .receive([&](const actors::placement_stats& s) { st = s; }, [](caf::error&) {});
  }
  fmt::print("placement replans {} drift {:.3f} over the last {} requests\n", st.replans, st.drift,
             st.window_requests);
  if (st.epoch == 0) return;
  bool applied = false;
  std::string problems;  // what the ranks said keeps them from the epoch
  for (int i = 0; i < 300 && !applied; ++i) {
    auto ms = live_members(sys, p_->node.coordinator, p_->node.token);
    applied = ms && placement_applied(*ms, st.epoch);
    if (!applied) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (ms) problems = placement_problems(*ms);
  }
  const auto now = p_->node.shard.latest();
  const auto fap =
      features::observed_fap(p_->features->accesses().snapshot(), p_->features->accesses().requests());
  const auto& topo = p_->node.shard.topology();
  fmt::print(
      "placement epoch {} {}: rows moved since epoch 0 {}; expected gather per 16-seed batch "
      "under all observed accesses {:.1f} us on epoch 0's plan, {:.1f} us now\n",
      st.epoch, applied ? "applied" : fmt::format("not applied within 30 s{}", problems),
      features::rows_moved(*p_->first_plan, *now.plan),
      features::expected_latency_us(topo, *p_->first_plan, fap, 16),
      features::expected_latency_us(config::with_ranks(topo, st.ranks()), *now.plan, fap, 16));
}

status cluster_gnn::run_workload(std::size_t workload) {
  auto& sys = p_->node.sys;
  const auto& ds = p_->node.shard.dataset();
  fmt::print("serving {} requests on {} pipelines ({} on {} members)\n", workload,
             p_->pipelines.size(), p_->pipelines.size() - p_->local, p_->members);
  std::fflush(stdout);
  actors::load_spec spec;
  spec.requests = serving::degree_requests(ds, workload);
  spec.clients = 8 * int(p_->pipelines.size());
  spec.keep_answers = true;
  auto result = std::make_shared<actors::load_result>();
  {
    caf::scoped_actor self{sys};
    actors::spawn_load_client(sys, p_->batcher, spec, result, self);
    self->receive([](actors::done_atom) {});
  }
  // The checksum covers the answered requests in request order (as a single
  // process computes it); a request whose rows lost every owner fails alone.
  std::vector<float> all;
  std::vector<std::uint64_t> failed;
  std::string first_error;
  for (std::size_t i = 0; i < spec.requests.size(); ++i) {
    if (!result->error_of[i].empty()) {
      if (failed.empty()) first_error = result->error_of[i];
      failed.push_back(spec.requests[i].sampler_seed);
      continue;
    }
    all.insert(all.end(), result->outputs[i].begin(), result->outputs[i].end());
  }
  if (!failed.empty())
    fmt::print("failed_ids {}\nfirst error: {}\n", fmt::join(failed, ","), first_error);
  actors::batcher_stats stats;
  {
    caf::scoped_actor self{sys};
    self->request(p_->batcher, std::chrono::seconds(5), actors::stats_atom::value)
        .receive([&](const actors::batcher_stats& s) { stats = s; }, [](caf::error&) {});
  }
  std::uint64_t here = 0, on_members = 0;
  for (std::size_t i = 0; i < stats.per_pipeline.size(); ++i)
    (i < p_->local ? here : on_members) += stats.per_pipeline[i];
  for (const auto n : stats.departed_batches) on_members += n;  // freed stand-ins
  fmt::print("batches {} here {} on members {} retried {}\n", stats.batches, here, on_members,
             stats.retried);
  // How far this pipeline's observed accesses drifted from the FAP epoch 0 used.
  const auto& acc = p_->features->accesses();
  fmt::print("observed accesses {} FAP drift {:.3f}\n", acc.total(),
             features::fap_drift(ds.fap(), acc.snapshot()));
  report_placement();
  // What each epoch's plan meant for this pipeline's reads (the measured side of
  // the link model's estimate above).
  for (const auto& e : p_->features->rows_by_epoch())
    if (e.gathers > 0)
      fmt::print("epoch {}: {} requests, rows per request {:.1f} local {:.1f} from other nodes\n",
                 e.epoch, e.gathers, double(e.local) / double(e.gathers),
                 double(e.remote) / double(e.gathers));
  // "answers" comes last: tests and scripts read up to it.
  fmt::print("answers {} failed {} checksum {} rows local {} from other nodes {} wall {:.2f} s\n",
             spec.requests.size() - failed.size(), failed.size(),
             checksum_hex(checksum(all.data(), all.size() * sizeof(float))),
             p_->features->local_rows(), p_->features->remote_rows(), result->wall_s);
  std::fflush(stdout);
  return status::ok();
}

}  // namespace spindle::runtime
