#include "client/door_load.hpp"

#include <atomic>
#include <thread>

namespace spindle::client {

namespace kserve = transport::kserve;
using clock_type = std::chrono::steady_clock;

status run_door_loop(const door_connect& connect, std::size_t n, std::size_t threads,
                     const std::vector<double>& send_at, const door_call& call,
                     const std::function<void()>& connected) {
  threads = std::max<std::size_t>(1, std::min(threads, std::max<std::size_t>(1, n)));
  std::vector<std::unique_ptr<kserve::door_client>> clients;
  for (std::size_t t = 0; t < threads; ++t) {
    SPINDLE_ASSIGN_OR_RETURN(auto c, connect());
    clients.push_back(std::move(c));
  }
  if (connected) connected();
  const bool open_loop = !send_at.empty();
  std::atomic<std::size_t> next{0};
  const auto t0 = clock_type::now();
  std::vector<std::thread> pool;
  for (auto& c : clients) {
    pool.emplace_back([&, client = c.get()] {
      for (std::size_t i; (i = next.fetch_add(1)) < n;) {
        auto due = clock_type::now();
        if (open_loop) {
          due = t0 + std::chrono::duration_cast<clock_type::duration>(
                         std::chrono::duration<double>(send_at[i]));
          std::this_thread::sleep_until(due);
        }
        call(*client, i, due);
      }
    });
  }
  for (auto& t : pool) t.join();
  return status::ok();
}

expected<door_connect> door_connector(const std::string& door, const std::string& endpoint,
                                      int timeout_ms) {
  if (door == "http")
    return door_connect([=] { return kserve::connect_http(endpoint, timeout_ms); });
  if (door == "grpc")
    return door_connect([=] { return kserve::connect_grpc(endpoint, timeout_ms); });
  return make_error(errc::invalid_argument, "--door {}: expected capnp, http or grpc", door);
}

}  // namespace spindle::client
