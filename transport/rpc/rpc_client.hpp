// C++ client of the front door: one connection (reused by every call), sync
// calls with a timeout, and two asynchronous drivers for load generation on
// that connection: closed loop (keep N calls in flight) and open loop (send
// each call at its scheduled time). Not thread-safe: one owner thread per
// client (Cap'n Proto's event loop is per thread); use one client per thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport/rpc/rpc_types.hpp"

namespace spindle::transport::rpc {

/// How a call the client chose not to send (its in-flight limit reached) is
/// reported: status overloaded, the message starting with this.
inline constexpr std::string_view kNotSent = "not sent: ";
/// How a call whose connection broke (the door went down) is reported: status
/// unavailable, the message starting with this. The server's own refusals never do.
inline constexpr std::string_view kDoorDown = "door down: ";

/// Called once per call with its index, answer and latency in seconds.
using gnn_callback = std::function<void(std::size_t, const gnn_answer&, double)>;
using rec_callback = std::function<void(std::size_t, const rec_answer&, double)>;
using tensor_callback = std::function<void(std::size_t, const tensor_answer&, double)>;

struct admin_reply {
  rpc_status status = rpc_status::ok;
  std::string message, json;
  std::vector<model_info> models;
  std::vector<tunable> tunables;
};

class rpc_client {
 public:
  /// Connects to "HOST:PORT" and checks the server's schema version (errors name
  /// the endpoint). `timeout_ms` bounds every call.
  static expected<std::unique_ptr<rpc_client>> connect(const std::string& endpoint,
                                                       int timeout_ms = 30000);
  /// Several doors ("HOST:PORT,HOST:PORT": a cluster's ranks): connects to the
  /// first that accepts, moving on from a refused or dead one (each named in the
  /// error when none accepts). `skipped` gets the doors passed over, with why.
  static expected<std::unique_ptr<rpc_client>> connect_any(
      const std::string& endpoints, int timeout_ms = 30000,
      std::vector<std::string>* skipped = nullptr);
  /// "A,B,C" split into its doors (empty parts dropped).
  static std::vector<std::string> split_endpoints(const std::string& endpoints);
  ~rpc_client();

  expected<gnn_answer> infer_gnn(const gnn_call& call);
  expected<std::vector<gnn_answer>> infer_gnn_batch(const std::vector<gnn_call>& calls);
  expected<rec_answer> infer_rec(const rec_call& call);

  /// Tensor model, unified path: the payload inside the Cap'n Proto message.
  expected<tensor_answer> infer_tensor(const std::string& model, std::span<const float> payload,
                                       std::uint32_t deadline_us = 0);
  /// SplitRPC: opens the UCX data path to the server (once per client; over
  /// UCX's transports, shared memory on one host). Needed before infer_split.
  status open_split();
  /// SplitRPC path: the payload over UCX into the server's tensor queue, then a
  /// small control record over Cap'n Proto.
  expected<tensor_answer> infer_split(const std::string& model, std::span<const float> payload,
                                      std::uint32_t deadline_us = 0);

  /// A closed loop with one call in flight (GNN or recommendation) then waits for
  /// each answer by polling its connection for up to `us` microseconds before it
  /// sleeps, as the door does for a lone client: the client's core stays awake,
  /// so an idle server's latency is measured without the client's own wake-up
  /// (tens of microseconds on a VM). 0 (the default): sleep at once. Loops with
  /// more calls in flight always sleep (polling would take a core from the server).
  void poll_answers(unsigned us);

  /// Closed loop: keeps `in_flight` calls outstanding until every call is answered.
  status run_closed_loop(const std::vector<gnn_call>& calls, std::size_t in_flight,
                         const gnn_callback& done);
  /// Open loop: sends call i at `send_at_s[i]` seconds after the start; latency is
  /// measured from that scheduled time (no coordinated omission). With 10,000
  /// calls unanswered, a due call is not sent: it is reported at once, status
  /// overloaded, its message starting with kNotSent (the client never queues
  /// without bound).
  status run_open_loop(const std::vector<gnn_call>& calls, const std::vector<double>& send_at_s,
                       const gnn_callback& done);

  /// Open loop of recommendation calls, as run_open_loop: call i is
  /// `call_of(i)` (a benchmark cycles through a few prepared calls). With
  /// `precise` false the sender sleeps on the event loop's timer (sends up to
  /// ~1 ms late) instead of polling through the last millisecond before each
  /// send, which at thousands of calls per second keeps a core busy; latency
  /// then counts from the actual send.
  status run_open_loop_rec(const std::function<const rec_call&(std::size_t)>& call_of,
                           const std::vector<double>& send_at_s, const rec_callback& done,
                           bool precise = true);

  /// Closed loop of `calls` recommendation calls, call i being `call_of(i)`,
  /// `in_flight` outstanding.
  status run_closed_loop_rec(const std::function<const rec_call&(std::size_t)>& call_of,
                             std::size_t calls, std::size_t in_flight, const rec_callback& done);

  /// Sends `calls` recommendation calls (call i is `call_of(i)`) all at once
  /// and hands each answer to `done` as it comes. A call left unanswered by the
  /// transport (the connection broke, or no answer within the client's timeout)
  /// is answered unavailable with a message starting with kDoorDown.
  status send_rec_all(const std::function<const rec_call&(std::size_t)>& call_of, std::size_t calls,
                      const rec_callback& done);

  /// Closed loop of `calls` tensor calls with the same payload, `in_flight`
  /// outstanding: over the SplitRPC path (`split`, after open_split: the payload
  /// over UCX, then the control record; calls pipelined, so the server's tensor
  /// queue batches them) or the unified path. `done(i, answer, seconds)`.
  status run_tensor_closed_loop(const std::string& model, std::span<const float> payload,
                                std::size_t calls, std::size_t in_flight, bool split,
                                const tensor_callback& done);

  expected<std::uint32_t> server_version();
  /// What the served models take (schema 5; no token).
  expected<std::vector<model_info>> models();
  /// Schema version 4: the server's models are loaded and warmed (as /v2/health/ready).
  expected<bool> server_ready();
  expected<admin_reply> stats(const std::string& token);
  expected<admin_reply> list_models(const std::string& token);
  expected<admin_reply> get_tunables(const std::string& token, const std::string& model);
  expected<admin_reply> set_tunable(const std::string& token, const std::string& model,
                                    const std::string& name, const std::string& value);
  expected<admin_reply> members(const std::string& token);
  /// Schema version 3: serve the model directory `path` (on the server) as `name`.
  expected<admin_reply> load_model(const std::string& token, const std::string& name,
                                   const std::string& path);
  expected<admin_reply> unload_model(const std::string& token, const std::string& name);
  /// Admin.updateGraph / graphVersion (version 6 servers).
  expected<graph_edit_answer> update_graph(const std::string& token, const graph_edit& edit);
  expected<graph_edit_answer> graph_version(const std::string& token);

  const std::string& endpoint() const { return endpoint_; }

  struct impl;

 private:
  rpc_client(std::unique_ptr<impl> i, std::string endpoint);
  std::unique_ptr<impl> impl_;
  std::string endpoint_;
};

}  // namespace spindle::transport::rpc
