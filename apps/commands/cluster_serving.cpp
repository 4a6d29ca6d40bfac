#include "apps/commands/cluster_serving.hpp"

#include <fmt/ranges.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include "actors/batcher_actor.hpp"
#include "actors/feature_shard_actor.hpp"
#include "actors/load_client.hpp"
#include "actors/node_actor.hpp"
#include "actors/pipeline_actor.hpp"
#include "actors/remote_pipeline.hpp"
#include "apps/commands/cluster_features.hpp"
#include "apps/commands/member_watch.hpp"
#include "core/checksum.hpp"
#include "core/log.hpp"
#include "embedding/feature_shard.hpp"
#include "graph/metrics.hpp"
#include "nn/model.hpp"
#include "sched/access_stats.hpp"
#include "sched/dataset_placement.hpp"
#include "sched/gnn_pipeline.hpp"
#include "transport/ucx/progress_loop.hpp"

namespace spindle::apps {
namespace {

namespace ucx = transport::ucx;

struct ucx_shard final : shard_service {
  ucx::context ctx;
  ucx::worker worker;
  ucx::mapped_memory memory;
  std::unique_ptr<ucx::progress_loop> loop;
  ucx_shard(ucx::context c, ucx::worker w, ucx::mapped_memory m)
      : ctx(std::move(c)), worker(std::move(w)), memory(std::move(m)) {}
};

expected<int> host_shard_of(const sched::placement_plan& plan, int server) {
  for (std::size_t i = 0; i < plan.shards.size(); ++i)
    if (plan.shards[i].server == server && plan.shards[i].tier == sched::shard_tier::host)
      return int(i);
  return make_error(errc::invalid_argument,
                    "server {} has no host-memory shard in the plan (memory = 0?)", server);
}

// Polls the coordinator until `done(members)` holds; fails naming `what` after 60 s.
expected<std::map<int, member_info>> wait_members(
    caf::actor_system& sys, const caf::actor& coord, std::string_view what,
    const std::function<bool(const std::map<int, member_info>&)>& done) {
  for (int i = 0; i < 600; ++i) {
    SPINDLE_ASSIGN_OR_RETURN(auto m, live_members(sys, coord));
    if (done(m)) return m;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return make_error(errc::unavailable, "{} within 60 s", what);
}

// Every rank that owns a shard of the plan is alive with a published region.
bool all_owners_published(const sched::placement_plan& plan,
                          const std::map<int, member_info>& members) {
  for (const auto& s : plan.shards) {
    auto it = members.find(s.server);
    if (it == members.end() || it->second.descriptor.empty()) return false;
  }
  return true;
}

// What one serving process loads: dataset, plan and model, kept alive together.
struct serving_assets {
  graph::dataset ds;
  sched::placement_plan plan;
  nn::heap_allocator weights;
  std::unique_ptr<nn::model> model;
  std::shared_ptr<sched::psgs_router> router =
      std::make_shared<sched::psgs_router>(sched::psgs_calibration{}, sched::routing_policy::fixed);
  thread_pool pool{0, "node"};
  explicit serving_assets(graph::dataset d) : ds(std::move(d)) {}
};

expected<std::unique_ptr<serving_assets>> load_assets(const config::topology& topo,
                                                      const std::string& dataset,
                                                      const std::string& model_dir) {
  SPINDLE_ASSIGN_OR_RETURN(auto ds, graph::dataset::open(dataset));
  auto a = std::make_unique<serving_assets>(std::move(ds));
  SPINDLE_ASSIGN_OR_RETURN(a->plan, sched::place_dataset(a->ds, topo, "fap"));
  SPINDLE_ASSIGN_OR_RETURN(auto model, nn::model::load(model_dir, a->weights));
  a->model = std::make_unique<nn::model>(std::move(model));
  return a;
}

// Stops `a` and waits until it has terminated, so nothing it references is
// freed under a batch it is still running (exit messages are asynchronous).
void stop_and_wait(caf::actor_system& sys, const caf::actor& a) {
  if (!a) return;
  caf::scoped_actor self{sys};
  self->send_exit(a, caf::exit_reason::user_shutdown);
  self->wait_for(a);
}

struct member_serving_impl final : member_serving {
  caf::actor_system* sys = nullptr;
  std::unique_ptr<serving_assets> assets;
  member_view view;
  std::unique_ptr<cluster_features> features;
  std::unique_ptr<member_watch> watch;
  caf::actor pipeline;
  caf::actor shard;  // answers gathers from readers that cannot read one-sidedly
  ~member_serving_impl() override {
    watch.reset();
    stop_and_wait(*sys, pipeline);  // it reads `features` and `assets` while it runs
    stop_and_wait(*sys, shard);
  }
};

}  // namespace

expected<std::unique_ptr<shard_service>> start_shard(const config::topology& topo,
                                                     const std::string& dataset, int rank) {
  SPINDLE_ASSIGN_OR_RETURN(auto ds, graph::dataset::open(dataset));
  SPINDLE_ASSIGN_OR_RETURN(auto plan, sched::place_dataset(ds, topo, "fap"));
  SPINDLE_ASSIGN_OR_RETURN(int shard, host_shard_of(plan, rank));
  const auto dim = std::uint32_t(ds.feature_dim());
  const auto rows =
      std::max<std::uint64_t>(1, plan.lookup.shard_row_count(sched::shard_index(shard)));
  SPINDLE_ASSIGN_OR_RETURN(auto ctx, ucx::context::create());
  SPINDLE_ASSIGN_OR_RETURN(auto w, ucx::worker::create(ctx));
  SPINDLE_ASSIGN_OR_RETURN(auto mem,
                           ucx::mapped_memory::allocate(ctx, embedding::shard_bytes(rows, dim)));
  SPINDLE_TRY(embedding::fill_shard(plan.lookup, sched::shard_index(shard), ds.features(), dim,
                                    {mem.data(), mem.size()}));
  auto s = std::make_unique<ucx_shard>(std::move(ctx), std::move(w), std::move(mem));
  SPINDLE_ASSIGN_OR_RETURN(auto desc, ucx::describe(s->worker, s->memory));
  s->descriptor = desc.encode();
  s->rows = s->memory.data();
  s->loop = std::make_unique<ucx::progress_loop>(s->worker);
  return std::unique_ptr<shard_service>(std::move(s));
}

expected<std::unique_ptr<member_serving>> start_member_serving(
    caf::actor_system& sys, caf::actor coordinator, caf::actor member_actor,
    const actors::bridge_handle& bridge, const shard_service& shard, const config::topology& topo,
    const std::string& dataset, const std::string& model_dir, int rank) {
  auto m = std::make_unique<member_serving_impl>();
  m->sys = &sys;
  SPINDLE_ASSIGN_OR_RETURN(m->assets, load_assets(topo, dataset, model_dir));
  auto& a = *m->assets;
  SPINDLE_ASSIGN_OR_RETURN(
      auto members, wait_members(sys, coordinator, "not every shard owner published its region",
                                 [&](const auto& ms) { return all_owners_published(a.plan, ms); }));
  m->view.update(std::move(members));
  SPINDLE_ASSIGN_OR_RETURN(m->features,
                           cluster_features::create(a.ds, a.plan, rank, shard.rows, m->view));
  m->watch = std::make_unique<member_watch>(sys, coordinator, m->view);
  m->pipeline =
      actors::spawn_pipeline(sys, a.ds, *a.model, *a.router, a.pool, m->features->source());
  caf::anon_send(bridge.actor, actors::register_atom::value, std::string(actors::pipeline_target),
                 m->pipeline);
  SPINDLE_ASSIGN_OR_RETURN(int host_shard, host_shard_of(a.plan, rank));
  m->shard = actors::spawn_feature_shard(sys, a.plan.lookup, sched::shard_index(host_shard),
                                         shard.rows, std::uint32_t(a.ds.feature_dim()));
  caf::anon_send(bridge.actor, actors::register_atom::value,
                 std::string(actors::feature_shard_target), m->shard);
  caf::anon_send(member_actor, actors::ready_atom::value, bridge.address);
  log::info("rank {}: pipeline ready for the coordinator's batches", rank);
  return std::unique_ptr<member_serving>(std::move(m));
}

namespace {

bool serving(const std::map<int, member_info>& ms, int rank) {
  auto it = ms.find(rank);
  return it != ms.end() && it->second.ready && !it->second.bridge.empty();
}

// Tells the bridge and the batcher which members' pipelines went down or came back.
member_watch::change_fn reroute(caf::actor bridge, caf::actor batcher,
                                std::map<int, caf::actor> proxies) {
  return [=](const std::map<int, member_info>& before, const std::map<int, member_info>& now) {
    for (const auto& [rank, proxy] : proxies) {
      const bool was = serving(before, rank), is = serving(now, rank);
      if (was && !is) {
        log::warn("rank {} stopped serving: its batches go to the other pipelines", rank);
        caf::anon_send(bridge, actors::peer_down_atom::value, rank);
        caf::anon_send(batcher, actors::pipeline_down_atom::value, proxy, true);
      } else if (is && (!was || before.at(rank).bridge != now.at(rank).bridge)) {
        log::info("rank {} serves again", rank);
        caf::anon_send(bridge, actors::peer_atom::value, rank, now.at(rank).bridge);
        caf::anon_send(batcher, actors::pipeline_down_atom::value, proxy, false);
      }
    }
  };
}

}  // namespace

// What a re-plan from the observed accesses would give, in the placement's own
// link model: expected gather latency per request of the plan in use and of a
// FAP plan made from what this pipeline gathered. Decision support only: live
// migration to the new plan is not built.
void report_replan(const serving_assets& a, const config::topology& topo,
                   const sched::access_counter& acc, std::uint64_t requests) {
  if (acc.total() == 0 || requests == 0) return;
  const auto fap = sched::observed_fap(acc.counts(), requests);
  auto policy = sched::make_policy("fap");
  if (!policy) return;
  auto degree = graph::in_degrees(a.ds.graph());
  auto fresh = (*policy)->place(topo, {fap, degree, a.plan.row_bytes, 1});
  if (!fresh)
    return log::warn("re-plan from observed accesses failed: {}", fresh.error().to_string());
  fmt::print(
      "re-plan from observed accesses: expected gather {:.1f} us per 16-seed batch now, "
      "{:.1f} us with the new plan (not applied)\n",
      sched::expected_latency_us(topo, a.plan, fap, 16),
      sched::expected_latency_us(topo, *fresh, fap, 16));
}

struct cluster_gnn::parts {
  caf::actor_system& sys;
  caf::actor coordinator;
  std::unique_ptr<serving_assets> assets;
  member_view view;
  std::unique_ptr<cluster_features> features;
  std::vector<caf::actor> pipelines;
  caf::actor batcher;
  sched::batch_policy policy;
  std::unique_ptr<member_watch> watch;
  std::size_t members = 0;
  config::topology topo;
  parts(caf::actor_system& s, caf::actor c) : sys(s), coordinator(std::move(c)) {}
};

cluster_gnn::cluster_gnn(std::unique_ptr<parts> p) : p_(std::move(p)) {}

cluster_gnn::~cluster_gnn() {
  p_->watch.reset();
  caf::anon_send_exit(p_->batcher, caf::exit_reason::user_shutdown);
  for (std::size_t i = 1; i < p_->pipelines.size(); ++i)  // remote stand-ins
    caf::anon_send_exit(p_->pipelines[i], caf::exit_reason::user_shutdown);
  if (!p_->pipelines.empty()) stop_and_wait(p_->sys, p_->pipelines[0]);  // reads `features`
}

expected<std::unique_ptr<cluster_gnn>> cluster_gnn::start(
    caf::actor_system& sys, caf::actor coordinator, const actors::bridge_handle& bridge,
    const shard_service& own, const config::topology& topo, const std::string& dataset,
    const std::string& model_dir, int expect, const std::string& calibration,
    sched::routing_policy policy) {
  auto p = std::make_unique<parts>(sys, coordinator);
  p->topo = topo;
  SPINDLE_ASSIGN_OR_RETURN(p->assets, load_assets(topo, dataset, model_dir));
  auto& a = *p->assets;
  if (!calibration.empty()) {
    std::ifstream in(calibration);
    if (!in) return make_error(errc::not_found, "{}: cannot open calibration", calibration);
    std::stringstream text;
    text << in.rdbuf();
    SPINDLE_ASSIGN_OR_RETURN(auto c, sched::psgs_calibration::from_json(text.str(), calibration));
    a.router = std::make_shared<sched::psgs_router>(std::move(c), policy);
    // A batch also closes once its summed PSGS passes the routing point (Quiver §4.2.2).
    const double point = a.router->threshold();
    if (point > 0 && std::isfinite(point)) p->policy.psgs_threshold = point;
  }
  auto ready = [&](const std::map<int, member_info>& ms) {
    int n = 0;
    for (const auto& [rank, m] : ms) n += rank > 0 && m.ready;
    return n >= expect && all_owners_published(a.plan, ms);
  };
  SPINDLE_ASSIGN_OR_RETURN(
      auto members, wait_members(sys, coordinator,
                                 fmt::format("fewer than {} members were ready", expect), ready));
  p->view.update(members);
  SPINDLE_ASSIGN_OR_RETURN(p->features,
                           cluster_features::create(a.ds, a.plan, 0, own.rows, p->view));
  p->pipelines = {
      actors::spawn_pipeline(sys, a.ds, *a.model, *a.router, a.pool, p->features->source())};
  std::map<int, caf::actor> proxies;
  for (const auto& [rank, m] : members) {
    if (rank == 0 || !serving(members, rank)) continue;
    caf::anon_send(bridge.actor, actors::peer_atom::value, rank, m.bridge);
    const auto* dsp = &a.ds;
    proxies[rank] = actors::spawn_remote_pipeline(
        sys, bridge.actor, rank, a.router,
        [dsp](const sched::gnn_request& r) { return sched::summed_psgs(*dsp, r); });
    p->pipelines.push_back(proxies[rank]);
  }
  p->members = proxies.size();
  p->policy.max_batch = 16;
  const auto* dsp = &a.ds;
  p->batcher = actors::spawn_batcher(sys, p->pipelines, p->policy, a.router,
                                     [dsp](const auto& r) { return sched::summed_psgs(*dsp, r); });
  p->watch = std::make_unique<member_watch>(sys, coordinator, p->view,
                                            reroute(bridge.actor, p->batcher, proxies));
  return std::unique_ptr<cluster_gnn>(new cluster_gnn(std::move(p)));
}

actors::gnn_model_binding cluster_gnn::binding(std::string name, std::size_t max_queue) const {
  auto& a = *p_->assets;
  return {name.empty() ? a.model->desc().name : std::move(name),
          p_->batcher,
          &a.ds,
          a.model.get(),
          a.router,
          p_->policy,
          max_queue};
}

std::string cluster_gnn::members_json() const {
  caf::scoped_actor self{p_->sys};
  std::string out = "[]";
  self->request(p_->coordinator, std::chrono::seconds(2), actors::status_atom::value)
      .receive([&](const std::string& text) { out = text; }, [](caf::error&) {});
  return out;
}

status cluster_gnn::run_workload(std::size_t workload) {
  auto& a = *p_->assets;
  auto& sys = p_->sys;
  fmt::print("serving {} requests on {} pipelines ({} on members)\n", workload,
             p_->pipelines.size(), p_->members);
  std::fflush(stdout);
  actors::load_spec spec;
  spec.requests = sched::degree_requests(a.ds, workload);
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
  std::uint64_t on_members = 0;
  for (std::size_t i = 1; i < stats.per_pipeline.size(); ++i) on_members += stats.per_pipeline[i];
  fmt::print("batches {} here {} on members {} retried {}\n", stats.batches,
             stats.per_pipeline.empty() ? 0 : stats.per_pipeline[0], on_members, stats.retried);
  // How far this pipeline's observed accesses drifted from the FAP the plan used
  // (the signal a re-plan on drift would act on; re-planning is not built yet).
  const auto& acc = p_->features->accesses();
  fmt::print("observed accesses {} FAP drift {:.3f}\n", acc.total(),
             sched::fap_drift(a.ds.fap(), acc.counts()));
  report_replan(a, p_->topo, acc, p_->features->gathers());
  // "answers" comes last: tests and scripts read up to it.
  fmt::print("answers {} failed {} checksum {} rows local {} from other nodes {} wall {:.2f} s\n",
             spec.requests.size() - failed.size(), failed.size(),
             checksum_hex(checksum(all.data(), all.size() * sizeof(float))),
             p_->features->local_rows(), p_->features->remote_rows(), result->wall_s);
  std::fflush(stdout);
  return status::ok();
}

}  // namespace spindle::apps
