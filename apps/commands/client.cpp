// `spindle client --connect HOST:PORT ...`: the front door from the command line.
//   infer   one GNN request, printed for people (or --json for scripts)
//   rec     one recommendation (DLRM) request: a batch from a JSON file, or one
//           sample from --dense and --sparse
//   load    the load generator: closed loop (--clients C) or open-loop Poisson
//           (--rate R); seeds uniform over N nodes, by a dataset's out-degree, or
//           from a trace file; warm-up; report with throughput, p50/p90/p99/p999,
//           errors by status; latency CDF as CSV and a gnuplot PNG
//   admin   one Admin call (stats, models, tunables, set, members, load, unload)
//   graph   update the served graph from .npy files, or read its version
#include <charconv>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <ranges>
#include <thread>

#include "apps/commands/client_args.hpp"
#include "apps/commands/client_load.hpp"
#include "apps/commands/command.hpp"
#include "apps/commands/members_table.hpp"
#include "client/door_load.hpp"
#include "client/load_sweep.hpp"
#include "client/rec_load.hpp"
#include "core/gnuplot.hpp"
#include "graph/dataset.hpp"
#include "serving/gnn_pipeline.hpp"
#include "transport/rpc/rpc_client.hpp"

namespace spindle::apps {
namespace {

namespace rpc = transport::rpc;

struct infer_args {
  std::vector<std::int64_t> seeds;
  std::vector<std::string> ids;  // input ids, resolved by the server
  std::uint64_t sampler_seed = 0;
  std::uint32_t deadline_us = 0;
  std::uint64_t min_version = 0;
  std::string node_type;  // typed graphs: the seeds' node type
  bool json = false;
};

status run_infer(const client_args& c, const infer_args& a) {
  SPINDLE_ASSIGN_OR_RETURN(auto client, open_door(c));
  if (a.seeds.empty() == a.ids.empty())
    return make_error(errc::invalid_argument, "infer: give --seeds (rows) or --ids (input ids)");
  rpc::gnn_call call{c.model, a.seeds, a.sampler_seed, a.deadline_us, a.ids, a.min_version};
  call.node_type = a.node_type;
  SPINDLE_ASSIGN_OR_RETURN(auto r, client->infer_gnn(call));
  if (a.json) {
    nlohmann::json j = {{"status", rpc::to_string(r.status)},
                        {"message", r.message},
                        {"width", r.width},
                        {"outputs", r.outputs},
                        {"server_us", r.server_us},
                        {"graph_version", r.graph_version}};
    fmt::print("{}\n", j.dump());
  } else if (r.status != rpc::rpc_status::ok) {
    return make_error(errc::invalid_argument, "{}: {}", rpc::to_string(r.status), r.message);
  } else {
    const std::size_t n = a.ids.empty() ? a.seeds.size() : a.ids.size();
    for (std::size_t i = 0; i < n; ++i) {
      if (a.ids.empty())
        fmt::print("seed {}:", a.seeds[i]);
      else
        fmt::print("id {}:", a.ids[i]);
      for (std::uint32_t k = 0; k < r.width; ++k) fmt::print(" {:.5g}", r.outputs[i * r.width + k]);
      fmt::print("\n");
    }
    fmt::print("server time {} us{}\n", r.server_us,
               r.graph_version > 0 ? fmt::format(", graph version {}", r.graph_version) : "");
  }
  return status::ok();
}

struct rec_args {
  std::string input;                // JSON file ("-": stdin)
  std::vector<float> dense;         // one sample
  std::vector<std::string> sparse;  // one sample: keys per table ("3,7")
  std::uint32_t deadline_us = 0;
  bool json = false;
};

expected<rpc::rec_call> rec_call_of(const rec_args& a) {
  if (!a.input.empty()) {
    if (!a.dense.empty() || !a.sparse.empty())
      return make_error(errc::invalid_argument, "rec: give --input, or --dense and --sparse");
    return client::rec_call_from_json(a.input);
  }
  if (a.dense.empty() && a.sparse.empty())
    return make_error(errc::invalid_argument,
                      "rec: give --input FILE.json, or one sample as --dense and --sparse");
  rpc::rec_call call;
  call.batch = 1;
  call.dense = a.dense;
  for (const auto& keys : a.sparse) {
    rpc::rec_bag bag{{}, {0}};
    for (auto part : std::views::split(std::string_view(keys), ',')) {
      std::string_view text(part.begin(), part.end());
      std::int64_t k = 0;
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), k);
      if (text.empty() || ec != std::errc() || p != text.data() + text.size())
        return make_error(errc::invalid_argument, "--sparse {}: '{}' is not a key", keys, text);
      bag.indices.push_back(k);
    }
    bag.offsets.push_back(std::int64_t(bag.indices.size()));
    call.sparse.push_back(std::move(bag));
  }
  return call;
}

status run_rec(const client_args& c, const rec_args& a) {
  SPINDLE_ASSIGN_OR_RETURN(auto call, rec_call_of(a));
  call.model = c.model;
  call.deadline_us = a.deadline_us;
  SPINDLE_ASSIGN_OR_RETURN(auto client, open_door(c));
  SPINDLE_ASSIGN_OR_RETURN(auto r, client->infer_rec(call));
  if (a.json) {
    nlohmann::json j = {{"status", rpc::to_string(r.status)},
                        {"message", r.message},
                        {"scores", r.scores},
                        {"server_us", r.server_us}};
    fmt::print("{}\n", j.dump());
    return status::ok();
  }
  if (r.status != rpc::rpc_status::ok)
    return make_error(errc::invalid_argument, "{}: {}", rpc::to_string(r.status), r.message);
  for (std::size_t b = 0; b < r.scores.size(); ++b)
    fmt::print("sample {}: {:.6g}\n", b, r.scores[b]);
  fmt::print("server time {} us\n", r.server_us);
  return status::ok();
}

struct admin_args {
  std::string call, model, name, value;
  bool json = false;  // members: the raw JSON instead of the table
};

status run_admin(const client_args& c, const admin_args& a) {
  SPINDLE_ASSIGN_OR_RETURN(auto token, token_of(c));
  SPINDLE_ASSIGN_OR_RETURN(auto client, open_door(c));
  expected<rpc::admin_reply> r =
      make_error(errc::invalid_argument, "admin: unknown call '{}'", a.call);
  if (a.call == "stats") r = client->stats(token);
  if (a.call == "models") r = client->list_models(token);
  if (a.call == "members") r = client->members(token);
  if (a.call == "tunables") r = client->get_tunables(token, a.model.empty() ? c.model : a.model);
  if (a.call == "set")
    r = client->set_tunable(token, a.model.empty() ? c.model : a.model, a.name, a.value);
  if (a.call == "load") r = client->load_model(token, a.model, a.name);
  if (a.call == "unload") r = client->unload_model(token, a.model);
  if (!r) return r.error();
  if (r->status != rpc::rpc_status::ok) {
    return make_error(errc::invalid_argument, "{}: {}", rpc::to_string(r->status), r->message);
  }
  if (a.call == "members" && !a.json && !r->json.empty())
    fmt::print("{}", members_table(nlohmann::json::parse(r->json)));
  else if (!r->json.empty())
    fmt::print("{}\n", nlohmann::json::parse(r->json).dump(2));
  for (const auto& m : r->models)
    fmt::print("{} {} {} in {} out {}\n", m.name, m.kind, m.arch, m.input_width, m.output_width);
  for (const auto& t : r->tunables) fmt::print("{} = {}\n", t.name, t.value);
  if (a.call == "set" || a.call == "load" || a.call == "unload") fmt::print("ok\n");
  return status::ok();
}

}  // namespace

void register_client(CLI::App& app, global_options&) {
  auto [cmd, c] = add_command<client_args>(
      app, "client", "Talk to a running server's front door (infer, rec, load, admin)");
  cmd->require_subcommand(1);
  cmd->add_option("--connect", c->connect,
                  "Server HOST:PORT, or several (HOST:PORT,HOST:PORT: a cluster's doors): one "
                  "call goes to the first that accepts; `load` spreads its calls over them")
      ->capture_default_str();
  cmd->add_option("--model", c->model, "Model name (see `admin models`)");
  cmd->add_option("--token", c->token, "Admin token");
  cmd->add_option("--token-file", c->token_file, "File holding the admin token");
  cmd->add_option("--timeout-ms", c->timeout_ms, "Per-call timeout")->capture_default_str();

  auto [infer, ia] = add_command<infer_args>(*cmd, "infer", "One GNN request");
  infer->add_option("--seeds", ia->seeds, "Node rows in the dataset (0..N-1)")->delimiter(',');
  infer
      ->add_option("--ids", ia->ids,
                   "Nodes by the input data's ids instead (node_names.txt / node_ids.npy of "
                   "the served dataset), e.g. CiteSeer's 100157")
      ->delimiter(',');
  infer
      ->add_option("--sampler-seed", ia->sampler_seed,
                   "Sampler seed: nonzero samples the request on its own (same seeds + seed, "
                   "same answer); 0 shares its batch's sampled graph")
      ->capture_default_str();
  infer->add_option("--deadline-us", ia->deadline_us, "Deadline (0: none)")->capture_default_str();
  infer->add_option("--node-type", ia->node_type,
                    "A typed graph's node type of the seeds (the seeds numbered within it)");
  infer->add_option("--min-version", ia->min_version,
                    "The graph version the answer must include (from `graph update`); 0: any")
      ->check(CLI::Validator(
          [](const std::string& v) {
            return !v.empty() && v[0] == '-' ? std::string("a graph version is >= 0")
                                             : std::string();
          },
          "VERSION"));
  infer->add_flag("--json", ia->json, "Print JSON");
  on_run(infer, [c, ia] { return run_infer(*c, *ia); });

  auto [rec, ra] = add_command<rec_args>(
      *cmd, "rec", "One recommendation (DLRM) request: click probability per sample");
  rec->add_option("--input", ra->input,
                  "JSON batch ('-': stdin): {\"dense\": [[x, ...] per sample], \"sparse\": "
                  "[[[key, ...] per table] per sample]}");
  rec->add_option("--dense", ra->dense, "One sample's dense features, comma-separated")
      ->delimiter(',');
  rec->add_option("--sparse", ra->sparse,
                  "One sample's keys for one table, comma-separated; repeat once per table, "
                  "in table order");
  rec->add_option("--deadline-us", ra->deadline_us, "Deadline (0: none)")->capture_default_str();
  rec->add_flag("--json", ra->json, "Print JSON");
  on_run(rec, [c, ra] { return run_rec(*c, *ra); });

  add_load_command(*cmd, c);
  add_graph_command(*cmd, c);

  auto [admin, aa] = add_command<admin_args>(
      *cmd, "admin",
      "One Admin call: stats | models | members | tunables [MODEL] | set MODEL NAME VALUE | "
      "load NAME MODEL_DIR | unload NAME");
  admin->add_option("call", aa->call, "stats, models, members, tunables, set, load or unload")
      ->required();
  admin->add_option("model", aa->model, "Model (tunables, set, load, unload)");
  admin->add_option("name", aa->name, "Tunable name (set); model directory on the server (load)");
  admin->add_option("value", aa->value, "New value (set)");
  admin->add_flag("--json", aa->json,
                  "members: the raw JSON (descriptors, bridges) instead of a table");
  on_run(admin, [c, aa] { return run_admin(*c, *aa); });
}

}  // namespace spindle::apps
