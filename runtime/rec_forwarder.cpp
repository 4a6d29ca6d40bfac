#include "runtime/rec_forwarder.hpp"

#include <pthread.h>

#include <chrono>
#include <map>

#include "core/log.hpp"
#include "transport/rpc/rpc_client.hpp"

namespace spindle::runtime {

namespace rpc = transport::rpc;

expected<forward_spec> parse_forward(const std::string& text) {
  const auto eq = text.find('=');
  forward_spec s;
  if (eq != std::string::npos) {
    s.name = text.substr(0, eq);
    s.endpoints = rpc::rpc_client::split_endpoints(text.substr(eq + 1));
  }
  if (s.name.empty() || s.endpoints.empty())
    return make_error(errc::invalid_argument,
                      "--forward '{}': expected NAME=HOST:PORT[,HOST:PORT...]", text);
  return s;
}

namespace {

// The description a door needs of a model served elsewhere, from its model_info.
expected<config::model_desc> desc_from(const rpc::model_info& m) {
  config::model_desc d;
  d.name = m.name;
  SPINDLE_ASSIGN_OR_RETURN(d.arch, config::parse_model_arch(m.arch));
  d.dense_in = int(m.input_width);
  d.table_rows.assign(m.table_rows.begin(), m.table_rows.end());
  if (d.table_rows.size() != m.tables)
    return make_error(errc::unsupported,
                      "model '{}': its server gives {} table sizes for {} tables (schema 5 or "
                      "later needed)",
                      m.name, d.table_rows.size(), m.tables);
  return d;
}

// Asks every endpoint in turn what `name` takes, until one answers.
expected<config::model_desc> learn(const forward_spec& spec, int wait_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  std::string why;
  do {
    for (const auto& e : spec.endpoints) {
      auto c = rpc::rpc_client::connect(e, 5000);
      if (!c) {
        why = c.error().message();
        continue;
      }
      auto models = (*c)->models();
      if (!models) {
        why = models.error().message();
        continue;
      }
      for (const auto& m : *models)
        if (m.name == spec.name) {
          if (m.kind == "gnn")
            return make_error(errc::invalid_argument,
                              "--forward {}: {} serves it as a GNN; only recommendation models "
                              "are forwarded",
                              spec.name, e);
          return desc_from(m);
        }
      why = fmt::format("{} does not serve '{}'", e, spec.name);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (std::chrono::steady_clock::now() < until);
  return make_error(errc::unavailable, "--forward {}={}: {}", spec.name,
                    fmt::join(spec.endpoints, ","), why);
}

}  // namespace

expected<std::shared_ptr<rec_forwarder>> rec_forwarder::start(const forward_spec& spec,
                                                              int timeout_ms, int wait_ms,
                                                              int threads) {
  SPINDLE_ASSIGN_OR_RETURN(auto d, learn(spec, wait_ms));
  std::shared_ptr<rec_forwarder> f(new rec_forwarder(
      spec, std::make_shared<const config::model_desc>(std::move(d)), timeout_ms));
  for (int i = 0; i < std::max(1, threads); ++i) f->threads_.emplace_back([p = f.get()] { p->run(); });
  log::info("forwarding '{}' to {}", spec.name, fmt::join(spec.endpoints, ", "));
  return f;
}

rec_forwarder::rec_forwarder(forward_spec spec, std::shared_ptr<const config::model_desc> desc,
                             int timeout_ms)
    : spec_(std::move(spec)), desc_(std::move(desc)), timeout_ms_(timeout_ms) {}

rec_forwarder::~rec_forwarder() {
  std::deque<job> left;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    left.swap(queue_);
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  // Calls still queued are dropped: the door's servers stopped before this.
}

void rec_forwarder::send(rpc::rec_call call, std::function<void(rpc::rec_answer)> done) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back({std::move(call), std::move(done)});
  }
  cv_.notify_one();
}

// One sender: its own client per endpoint (a client belongs to one thread). It
// takes every call queued (up to kMostAtOnce) and sends them all at once, so the
// calls in flight follow what the door admits (its admission control caps them
// per model), not the number of senders. Calls start at the next endpoint and
// move on from one that does not answer them (refused connection, broken, or
// no answer within the timeout); an answer from a server, even a refusal, is final.
void rec_forwarder::run() {
  pthread_setname_np(pthread_self(), "rec-forward");
  std::map<std::string, std::unique_ptr<rpc::rpc_client>> clients;
  while (true) {
    std::vector<job> jobs;
    std::size_t first = 0;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      while (!queue_.empty() && jobs.size() < kMostAtOnce) {
        jobs.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      first = next_++;
    }
    forward(jobs, first, clients);
  }
}

void rec_forwarder::forward(std::vector<job>& jobs, std::size_t first,
                            std::map<std::string, std::unique_ptr<rpc::rpc_client>>& clients) {
  std::vector<std::size_t> left(jobs.size());
  for (std::size_t i = 0; i < left.size(); ++i) left[i] = i;
  std::string why;
  for (std::size_t k = 0; k < spec_.endpoints.size() && !left.empty(); ++k) {
    const auto& e = spec_.endpoints[(first + k) % spec_.endpoints.size()];
    auto& c = clients[e];
    if (!c) {
      auto made = rpc::rpc_client::connect(e, timeout_ms_);
      if (!made) {
        why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", e, made.error().message());
        continue;
      }
      c = std::move(*made);
    }
    std::vector<bool> answered(left.size(), false);  // done() called
    std::string down;
    std::size_t back = 0;  // calls the transport handed back (answered or not)
    count_in_flight(std::ptrdiff_t(left.size()));
    const status st = c->send_rec_all(
        [&](std::size_t i) -> const rpc::rec_call& { return jobs[left[i]].call; }, left.size(),
        [&](std::size_t i, const rpc::rec_answer& a, double) {
          ++back;
          count_in_flight(-1);
          if (a.status == rpc::rpc_status::unavailable && a.message.rfind(rpc::kDoorDown, 0) == 0) {
            down = a.message.substr(rpc::kDoorDown.size());  // to the next endpoint
            return;
          }
          answered[i] = true;
          jobs[left[i]].done(a);
        });
    count_in_flight(-std::ptrdiff_t(left.size() - back));  // lost with a failed event loop
    if (!st.is_ok()) down = st.message();
    std::vector<std::size_t> still;
    for (std::size_t i = 0; i < left.size(); ++i)
      if (!answered[i]) still.push_back(left[i]);
    if (!still.empty()) {
      why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", e, down);
      c.reset();  // reconnect next time
    }
    left = std::move(still);
  }
  for (auto i : left)
    jobs[i].done({rpc::rpc_status::unavailable,
                  fmt::format("'{}' is served by {}, and none answered: {}", spec_.name,
                              fmt::join(spec_.endpoints, ", "), why),
                  {},
                  0});
}

void rec_forwarder::count_in_flight(std::ptrdiff_t change) {
  const auto now = in_flight_.fetch_add(change) + change;
  for (auto most = most_in_flight_.load(); now > most;)
    if (most_in_flight_.compare_exchange_weak(most, now)) break;
}

actors::rec_model_binding rec_forwarder::binding(serving::admission_options admission) {
  actors::rec_model_binding b;
  b.name = spec_.name;
  b.admission = admission;
  b.remote_desc = desc_;
  b.forward = [this](rpc::rec_call call, std::function<void(rpc::rec_answer)> done) {
    send(std::move(call), std::move(done));
  };
  return b;
}

}  // namespace spindle::runtime
