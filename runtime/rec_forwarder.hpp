// A cluster door's stand-in for a recommendation model that another server
// serves (a Hera plan server that `launch` started): calls are queued and sent
// by a few threads ("rec-forward"), each with its own Cap'n Proto clients (one
// per endpoint), to the model's servers in turn, moving on from one that does
// not answer. A sender sends every call queued at once, so as many calls are in
// flight as the door's admission admits. The answer (or refusal) goes back to
// the caller once. Also learns the model's description from its server
// (Inference.models) for the door's checks and listings. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actors/gateway.hpp"
#include "config/model.hpp"
#include "transport/rpc/rpc_client.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::runtime {

/// "NAME=HOST:PORT[,HOST:PORT...]" (a door's --forward); errors name the value.
struct forward_spec {
  std::string name;
  std::vector<std::string> endpoints;
};
expected<forward_spec> parse_forward(const std::string& text);

class rec_forwarder {
 public:
  /// Asks the endpoints (in turn, for up to `wait_ms`) what `spec.name` takes;
  /// fails naming the model and every endpoint when none serves it. `threads`
  /// senders; each sends all the calls it takes at once.
  static expected<std::shared_ptr<rec_forwarder>> start(const forward_spec& spec,
                                                        int timeout_ms = 30000,
                                                        int wait_ms = 30000, int threads = 4);
  ~rec_forwarder();  // joins its threads; destroy it after the gateway whose binding it made
  rec_forwarder(const rec_forwarder&) = delete;
  rec_forwarder& operator=(const rec_forwarder&) = delete;

  /// The gateway binding: admission from `admission`, calls through this forwarder.
  actors::rec_model_binding binding(serving::admission_options admission);
  const config::model_desc& desc() const { return *desc_; }
  /// The most calls this forwarder has had in flight at once so far.
  std::size_t most_in_flight() const { return std::size_t(most_in_flight_.load()); }
  /// Calls one sender takes (and sends) at once at most.
  static constexpr std::size_t kMostAtOnce = 4096;

 private:
  struct job {
    transport::rpc::rec_call call;
    std::function<void(transport::rpc::rec_answer)> done;
  };
  rec_forwarder(forward_spec spec, std::shared_ptr<const config::model_desc> desc, int timeout_ms);
  void send(transport::rpc::rec_call call, std::function<void(transport::rpc::rec_answer)> done);
  void run();
  void forward(std::vector<job>& jobs, std::size_t first,
               std::map<std::string, std::unique_ptr<transport::rpc::rpc_client>>& clients);
  void count_in_flight(std::ptrdiff_t change);

  forward_spec spec_;
  std::shared_ptr<const config::model_desc> desc_;
  int timeout_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<job> queue_;  // guarded by mu_
  bool stop_ = false;      // guarded by mu_
  std::size_t next_ = 0;   // guarded by mu_: the endpoint the next call starts at
  std::vector<std::thread> threads_;
  std::atomic<std::ptrdiff_t> in_flight_{0}, most_in_flight_{0};
};

}  // namespace spindle::runtime
