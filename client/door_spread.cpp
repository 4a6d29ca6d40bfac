#include "client/door_spread.hpp"

#include <fmt/format.h>

#include <mutex>
#include <thread>

namespace spindle::client {
namespace {

namespace rpc = transport::rpc;

// The doors that accept a connection now; the others are named on stderr.
std::vector<std::string> live_doors(const door_list& doors) {
  std::vector<std::string> live;
  for (const auto& e : doors.endpoints) {
    auto client = rpc::rpc_client::connect(e, doors.timeout_ms);
    if (client) {
      live.push_back(e);
    } else {
      fmt::print(stderr, "spindle: {}: {}; its calls go to the other doors\n", e,
                 client.error().message());
    }
  }
  return live;
}

}  // namespace

expected<std::map<std::string, std::size_t>> spread_calls(const door_list& doors,
                                                          const std::vector<rpc::gnn_call>& calls,
                                                          int clients,
                                                          const std::vector<double>& send_at,
                                                          const rpc::gnn_callback& done) {
  const auto live = live_doors(doors);
  if (live.empty())
    return make_error(errc::unavailable, "--connect {}: no door answered", doors.connect);
  std::mutex mu;
  std::map<std::string, std::size_t> answered;
  std::vector<status> results(live.size());
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < live.size(); ++d) {
    threads.emplace_back([&, d] {
      std::vector<std::size_t> mine;
      for (std::size_t i = d; i < calls.size(); i += live.size()) mine.push_back(i);
      std::vector<rpc::gnn_call> part;
      std::vector<double> at;
      for (auto i : mine) {
        part.push_back(calls[i]);
        if (!send_at.empty()) at.push_back(send_at[i]);
      }
      auto client = rpc::rpc_client::connect(live[d], doors.timeout_ms);
      if (!client) {
        results[d] = client.error();
        return;
      }
      auto local = [&](std::size_t k, const rpc::gnn_answer& r, double s) {
        std::lock_guard lock(mu);
        answered[live[d]] += r.status == rpc::rpc_status::ok;
        done(mine[k], r, s);
      };
      const int window = std::max(1, clients / int(live.size()));
      results[d] = send_at.empty() ? (*client)->run_closed_loop(part, std::size_t(window), local)
                                   : (*client)->run_open_loop(part, at, local);
    });
  }
  for (auto& t : threads) t.join();
  for (std::size_t d = 0; d < live.size(); ++d)
    if (!results[d]) fmt::print(stderr, "spindle: {}: {}\n", live[d], results[d].to_string());
  return answered;
}

}  // namespace spindle::client
