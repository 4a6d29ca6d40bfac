#include "client/admin_console.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "config/tunables.hpp"

namespace spindle::client {
namespace {

namespace rpc = transport::rpc;

const std::vector<std::string> kCommands = {"help",   "models",  "stats", "tunables", "set", "load",
                                            "unload", "members", "infer", "watch",    "quit"};

// The usage line of a command given the wrong number of words.
std::string usage_of(const std::string& cmd) {
  if (cmd == "set") return "usage: set MODEL TUNABLE VALUE  (`tunables MODEL` lists them)";
  if (cmd == "tunables") return "usage: tunables MODEL";
  if (cmd == "load") return "usage: load NAME MODEL_DIR";
  if (cmd == "unload") return "usage: unload NAME";
  return "";
}

std::string help_text() {
  return "commands:\n"
         "  models                          list loaded models\n"
         "  stats [MODEL]                   counters, latency percentiles, tunables (JSON)\n"
         "  tunables MODEL                  live-tunable settings of a model\n"
         "  set MODEL NAME VALUE            change a tunable now (the tunables below)\n"
         "  load NAME MODEL_DIR             serve a GNN model directory (on the server) as NAME\n"
         "  unload NAME                     stop serving NAME once its calls finished\n"
         "  members                         cluster membership and health\n"
         "  infer MODEL ID[,ID...] [SEED]   one GNN request\n"
         "  watch stats [SECONDS] [TIMES]   refreshing per-model table (default every 1 s, until "
         "Ctrl-C)\n"
         "  complete TEXT                   the words tab offers after TEXT (for scripts)\n"
         "  help, quit\n"
         "tunables (set MODEL NAME VALUE):\n" +
         config::tunables_help();
}

status admin_ok(const expected<rpc::admin_reply>& r) {
  if (!r) return r.error();
  if (r->status != rpc::rpc_status::ok) {
    return make_error(errc::invalid_argument, "{}: {}", rpc::to_string(r->status), r->message);
  }
  return status::ok();
}

void print_watch_table(const std::string& json) {
  const auto j = nlohmann::json::parse(json);
  // Percentiles of the last 10 s (a live change shows at once) beside the whole
  // ring's (the last 100,000 answers).
  fmt::print("{:<16} {:>10} {:>10} {:>10} {:>10} {:>12} {:>12} {:>9} {:>9}\n", "model", "requests",
             "ok", "overloaded", "in_flight", "p50 ms (10s)", "p99 ms (10s)", "p50 ms", "p99 ms");
  for (const auto& [name, m] : j["models"].items()) {
    const auto& recent = m.contains("latency_ms_10s") ? m["latency_ms_10s"] : m["latency_ms"];
    fmt::print("{:<16} {:>10} {:>10} {:>10} {:>10} {:>12.3f} {:>12.3f} {:>9.3f} {:>9.3f}\n", name,
               m["requests"].get<std::uint64_t>(), m["ok"].get<std::uint64_t>(),
               m["overloaded"].get<std::uint64_t>(), m["in_flight"].get<std::uint64_t>(),
               recent["p50"].get<double>(), recent["p99"].get<double>(),
               m["latency_ms"]["p50"].get<double>(), m["latency_ms"]["p99"].get<double>());
  }
}

std::atomic<bool> g_interrupted{false};
void on_interrupt(int) { g_interrupted = true; }

// Ctrl-C ends a `watch` and returns to the prompt instead of ending the shell.
struct interrupt_scope {
  struct sigaction old {};
  interrupt_scope() {
    g_interrupted = false;
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
  }
  ~interrupt_scope() { sigaction(SIGINT, &old, nullptr); }
};

status watch(console_state& s, const std::vector<std::string>& w) {
  if (w.size() < 2 || w[1] != "stats")
    return make_error(errc::invalid_argument, "usage: watch stats [SECONDS] [TIMES]");
  const double every = w.size() > 2 ? std::stod(w[2]) : 1.0;
  const long times = w.size() > 3 ? std::stol(w[3]) : -1;
  if (!(every > 0)) return make_error(errc::invalid_argument, "watch: SECONDS must be > 0");
  interrupt_scope ctrl_c;
  for (long i = 0; (times < 0 || i < times) && !g_interrupted; ++i) {
    auto r = s.client->stats(s.token);
    SPINDLE_TRY(admin_ok(r));
    if (isatty(STDOUT_FILENO)) fmt::print("\033[H\033[2J");
    print_watch_table(r->json);
    std::fflush(stdout);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(every);
    while ((times < 0 || i + 1 < times) && !g_interrupted &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return status::ok();
}

status infer(console_state& s, const std::vector<std::string>& w) {
  if (w.size() < 3)
    return make_error(errc::invalid_argument, "usage: infer MODEL ID[,ID...] [SAMPLER_SEED]");
  rpc::gnn_call call{w[1], {}, w.size() > 3 ? std::stoull(w[3]) : 0, 0};
  std::stringstream ids(w[2]);
  for (std::string id; std::getline(ids, id, ',');) call.seeds.push_back(std::stoll(id));
  SPINDLE_ASSIGN_OR_RETURN(auto r, s.client->infer_gnn(call));
  if (r.status != rpc::rpc_status::ok)
    return make_error(errc::invalid_argument, "{}: {}", rpc::to_string(r.status), r.message);
  for (std::size_t i = 0; i < call.seeds.size(); ++i) {
    fmt::print("{}:", call.seeds[i]);
    for (std::uint32_t k = 0; k < r.width; ++k) fmt::print(" {:.5g}", r.outputs[i * r.width + k]);
    fmt::print("\n");
  }
  return status::ok();
}

// The words that may come next after `before` (the words already typed):
// commands first, then model names after a command that takes one, then the
// model's tunable names after `set MODEL`.
std::vector<std::string> candidates(console_state& s, const std::vector<std::string>& before) {
  static const std::vector<std::string> takes_model = {"stats", "tunables", "set", "unload",
                                                       "infer"};
  if (before.empty()) return kCommands;
  if (before.size() == 1 &&
      std::find(takes_model.begin(), takes_model.end(), before[0]) != takes_model.end())
    return s.model_names;
  if (before.size() == 1 && before[0] == "watch") return {"stats"};
  if (before.size() == 2 && before[0] == "set") {
    auto& names = s.tunable_names[before[1]];
    if (names.empty()) {
      if (auto r = s.client->get_tunables(s.token, before[1]);
          r && r->status == rpc::rpc_status::ok)
        for (const auto& t : r->tunables) names.push_back(t.name);
    }
    return names;
  }
  return {};
}

}  // namespace

std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}

// The model names tab completion offers (at start, and after load / unload).
void refresh_names(console_state& s) {
  auto r = s.client->list_models(s.token);
  if (!r || r->status != rpc::rpc_status::ok) return;
  s.model_names.clear();
  for (const auto& m : r->models) s.model_names.push_back(m.name);
}

// What tab offers at the end of `line` (the text typed so far): the candidates
// for the word being typed that start with its prefix.
std::vector<std::string> completions(console_state& s, const std::string& line) {
  auto before = split_words(line);
  std::string prefix;
  if (!before.empty() && !line.empty() && !std::isspace(static_cast<unsigned char>(line.back()))) {
    prefix = before.back();
    before.pop_back();
  }
  std::vector<std::string> out;
  for (const auto& c : candidates(s, before))
    if (c.rfind(prefix, 0) == 0) out.push_back(c);
  return out;
}

// Runs one command line; returns false on `quit`.
bool run_command(console_state& s, const std::string& line, bool& failed) {
  const auto w = split_words(line);
  if (w.empty()) return true;
  status st = status::ok();
  try {
    const std::string& cmd = w[0];
    if (cmd == "quit" || cmd == "exit") return false;
    if (cmd == "help") {
      fmt::print("{}", help_text());
    } else if (cmd == "models") {
      auto r = s.client->list_models(s.token);
      st = admin_ok(r);
      if (st) {
        for (const auto& m : r->models)
          fmt::print("{}  {} ({})  in {}  out {}\n", m.name, m.kind, m.arch, m.input_width,
                     m.output_width);
      }
    } else if (cmd == "stats") {
      auto r = s.client->stats(s.token);
      st = admin_ok(r);
      if (st) {
        auto j = nlohmann::json::parse(r->json);
        if (w.size() > 1 && !j["models"].contains(w[1])) {
          std::string names;
          for (const auto& [n, _] : j["models"].items()) names += (names.empty() ? "" : ", ") + n;
          st = make_error(errc::invalid_argument, "unknown model '{}' (loaded: {})", w[1],
                          names.empty() ? "none" : names);
        } else {
          fmt::print("{}\n", (w.size() > 1 ? j["models"][w[1]] : j).dump(2));
        }
      }
    } else if (cmd == "tunables" && w.size() == 2) {
      auto r = s.client->get_tunables(s.token, w[1]);
      st = admin_ok(r);
      if (st) {
        for (const auto& t : r->tunables) fmt::print("{} = {}\n", t.name, t.value);
      }
    } else if (cmd == "set" && w.size() == 4) {
      st = admin_ok(s.client->set_tunable(s.token, w[1], w[2], w[3]));
      if (st) fmt::print("{} {} = {}\n", w[1], w[2], w[3]);
    } else if (cmd == "load" && w.size() == 3) {
      st = admin_ok(s.client->load_model(s.token, w[1], w[2]));
      if (st) fmt::print("loaded {}\n", w[1]), refresh_names(s);
    } else if (cmd == "unload" && w.size() == 2) {
      st = admin_ok(s.client->unload_model(s.token, w[1]));
      if (st) fmt::print("unloaded {}\n", w[1]), refresh_names(s);
    } else if (cmd == "members") {
      auto r = s.client->members(s.token);
      st = admin_ok(r);
      if (st) fmt::print("{}\n", nlohmann::json::parse(r->json).dump(2));
    } else if (cmd == "complete") {  // what tab offers after the rest of the line (scripts, tests)
      const std::string rest = line.substr(line.find("complete") + 8);
      for (const auto& c : completions(s, rest.empty() ? rest : rest.substr(1)))
        fmt::print("{}\n", c);
    } else if (cmd == "infer") {
      st = infer(s, w);
    } else if (cmd == "watch") {
      st = watch(s, w);
    } else if (!usage_of(cmd).empty()) {
      st = make_error(errc::invalid_argument, "{}", usage_of(cmd));
    } else {
      st = make_error(errc::invalid_argument, "unknown or incomplete command '{}' (try help)",
                      fmt::join(w, " "));
    }
  } catch (const std::exception& e) {
    st = make_error(errc::invalid_argument, "'{}': bad number ({})", fmt::join(w, " "), e.what());
  }
  if (!st) {
    fmt::print(stderr, "error: {}\n", st.message());
    failed = true;
  }
  return true;
}

}  // namespace spindle::client
