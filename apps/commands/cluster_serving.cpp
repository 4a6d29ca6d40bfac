#include "apps/commands/cluster_serving.hpp"

#include <fmt/ranges.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "actors/node_actor.hpp"
#include "core/checksum.hpp"
#include "core/log.hpp"
#include "embedding/feature_gather.hpp"
#include "embedding/feature_shard.hpp"
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

// Members with a published shard, by rank, from the coordinator's status.
expected<std::map<int, std::string>> published(caf::scoped_actor& self, const caf::actor& coord) {
  std::map<int, std::string> out;
  status st;
  self->request(coord, std::chrono::seconds(5), actors::status_atom::value)
      .receive(
          [&](const std::string& text) {
            for (const auto& m : nlohmann::json::parse(text))
              if (m["alive"].get<bool>() && !m["descriptor"].get<std::string>().empty())
                out[m["rank"].get<int>()] = m["descriptor"].get<std::string>();
          },
          [&](caf::error& e) { st = make_error(errc::unavailable, "status: {}", to_string(e)); });
  if (!st) return st;
  return out;
}

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
  s->loop = std::make_unique<ucx::progress_loop>(s->worker);
  return std::unique_ptr<shard_service>(std::move(s));
}

status serve_from_cluster(caf::actor_system& sys, caf::actor coordinator,
                          const config::topology& topo, const std::string& dataset,
                          const std::string& model_dir, std::size_t workload, int expect) {
  SPINDLE_ASSIGN_OR_RETURN(auto ds, graph::dataset::open(dataset));
  SPINDLE_ASSIGN_OR_RETURN(auto plan, sched::place_dataset(ds, topo, "fap"));
  nn::heap_allocator weights;
  SPINDLE_ASSIGN_OR_RETURN(auto model, nn::model::load(model_dir, weights));
  caf::scoped_actor self{sys};
  std::map<int, std::string> members;
  for (int i = 0; i < 600 && int(members.size()) < expect; ++i) {
    SPINDLE_ASSIGN_OR_RETURN(members, published(self, coordinator));
    if (int(members.size()) < expect) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (int(members.size()) < expect)
    return make_error(errc::unavailable, "only {} of {} members published a shard within 60 s",
                      members.size(), expect);
  // This thread owns the reader worker for the whole run.
  SPINDLE_ASSIGN_OR_RETURN(auto ctx, ucx::context::create());
  SPINDLE_ASSIGN_OR_RETURN(auto worker, ucx::worker::create(ctx));
  const auto dim = std::uint32_t(ds.feature_dim());
  std::vector<std::byte> own;
  std::vector<std::unique_ptr<ucx::remote_region>> regions;
  std::vector<embedding::shard_access> access(plan.shards.size());
  std::map<int, std::vector<int>> shards_of;  // member rank -> its shards
  for (std::size_t i = 0; i < plan.shards.size(); ++i) {
    const int server = plan.shards[i].server;
    shards_of[server].push_back(int(i));
    if (server == 0) {
      own.resize(embedding::shard_bytes(plan.lookup.shard_row_count(sched::shard_index(i)), dim));
      SPINDLE_TRY(
          embedding::fill_shard(plan.lookup, sched::shard_index(i), ds.features(), dim, own));
      access[i] = {own.data(), nullptr, 0.0};
      continue;
    }
    auto it = members.find(server);
    if (it == members.end())
      return make_error(errc::unavailable, "no member serves shard {} (rank {})", i, server);
    SPINDLE_ASSIGN_OR_RETURN(auto desc, ucx::region_descriptor::decode(it->second));
    SPINDLE_ASSIGN_OR_RETURN(auto region, ucx::remote_region::attach(worker, desc));
    access[i] = {nullptr, region.get(), 1.0};
    regions.push_back(std::move(region));
  }
  embedding::feature_gatherer gatherer(plan.lookup, dim * 4, access);
  std::uint64_t remote_rows = 0, local_rows = 0;
  // The control plane's word on members (CAF down messages, via the coordinator):
  // a member seen down has its shards marked unreachable, so its rows come from
  // replicas or fail cleanly, even on shared memory where a dead owner's mapped
  // rows would stay readable. Checked at most every 20 ms.
  auto last_check = std::chrono::steady_clock::now();
  std::set<int> down;
  auto watch_members = [&] {
    if (std::chrono::steady_clock::now() - last_check < std::chrono::milliseconds(20)) return;
    last_check = std::chrono::steady_clock::now();
    auto alive = published(self, coordinator);
    if (!alive) return;
    for (const auto& [rank, _] : members) {
      const auto now = alive->find(rank);
      if (now == alive->end() && !down.count(rank)) {
        down.insert(rank);
        for (int shard : shards_of[rank]) gatherer.mark_unreachable(shard);
        log::warn("member rank {} is down: its shards are unreachable", rank);
      } else if (now != alive->end() && down.count(rank)) {
        // It rejoined with a new region: attach it and read its shards again.
        auto desc = ucx::region_descriptor::decode(now->second);
        auto region = desc ? ucx::remote_region::attach(worker, *desc)
                           : expected<std::unique_ptr<ucx::remote_region>>(desc.error());
        if (!region) {
          log::warn("member rank {} rejoined but cannot be attached: {}", rank,
                    region.error().to_string());
          continue;
        }
        for (int shard : shards_of[rank]) gatherer.reattach(shard, {nullptr, region->get(), 1.0});
        regions.push_back(std::move(*region));
        down.erase(rank);
        log::info("member rank {} rejoined: its shards are readable again", rank);
      }
    }
  };
  sched::feature_source source = [&](std::span<const std::int64_t> ids, float* out) -> status {
    watch_members();
    SPINDLE_ASSIGN_OR_RETURN(
        auto rep, gatherer.gather(ids, {reinterpret_cast<std::byte*>(out), ids.size() * dim * 4}));
    remote_rows += rep.remote_rows + rep.mapped_rows;
    local_rows += rep.local_rows - rep.mapped_rows;
    return status::ok();
  };
  sched::psgs_router router(sched::psgs_calibration{}, sched::routing_policy::fixed);
  thread_pool pool(0, "node");
  sched::gnn_pipeline pipeline(ds, model, router, pool, source);
  fmt::print("serving {} requests\n", workload);
  std::fflush(stdout);
  // A request whose rows have no reachable owner fails alone; the rest are answered.
  auto sum = sched::answer_all(pipeline, sched::degree_requests(ds, workload));
  if (!sum.failed_ids.empty())
    fmt::print("failed_ids {}\nfirst error: {}\n", fmt::join(sum.failed_ids, ","), sum.first_error);
  fmt::print("answers {} failed {} checksum {} rows local {} from other nodes {}\n", sum.answered,
             sum.failed_ids.size(), checksum_hex(sum.checksum), local_rows, remote_rows);
  std::fflush(stdout);
  return status::ok();
}

}  // namespace spindle::apps
