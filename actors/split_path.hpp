// SplitRPC's data path (SplitRPC §3) for tensor models: a small control record
// arrives over Cap'n Proto while the payload arrives over UCX (active message;
// rendezvous for large payloads, pulled straight into the model's tensor queue
// slot, so the server copies nothing), or, on the unified path, inside the
// Cap'n Proto message (copied once into the queue). An Inference Monitor per
// model tracks READY -> RX_COMPLETE -> WORK_COMPLETE -> TX_COMPLETE; an
// executor thread per model takes committed requests as one contiguous span.
// Threads: "ucx-progress" (payload arrival), "tensor-<model>" (one executor per
// model), "split-reaper" (orphaned halves). Thread-safe entry points.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hps/rec_runner.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::actors {

/// A tensor model: computes one result per request over a batch that is one
/// contiguous span of float32 payloads (`sizes` floats each, back to back).
struct tensor_model {
  using results = std::vector<std::vector<float>>;
  std::string name;
  std::function<results(const float* batch, const std::vector<std::size_t>& sizes)> compute;
  std::size_t max_batch = 32;
  /// Optional: per-request errors (answered bad_request, naming the problem);
  /// `errors` has one entry per request, empty when it succeeded. Used instead
  /// of `compute` when set.
  std::function<results(const float* batch, const std::vector<std::size_t>& sizes,
                        std::vector<std::string>& errors)>
      compute_checked;
};

/// The built-in "sum" model: per request, [sum of its values, count]. Touches
/// every payload byte once: a stand-in for compute in the RPC-tax benchmark.
tensor_model sum_model(std::string name = "sum");

/// A recommendation model on the tensor path (SplitRPC carrying a real model):
/// each payload is a request packed by splitrpc::pack_rec_request; the requests the
/// executor takes at once become one batch (one forward pass through `runner`),
/// and each gets its scores. `owner` keeps what the runner reads alive.
tensor_model rec_tensor_model(std::string name, std::shared_ptr<const hps::rec_runner> runner,
                              const nn::model* model, std::shared_ptr<const void> owner);

struct split_stats {
  std::uint64_t calls = 0, copied_bytes = 0, zero_copy_bytes = 0;
};

class split_path {
 public:
  /// `queue_bytes` per model; starts the UCX worker and the executors. A payload
  /// or a control record left without its other half for `orphan_after` is
  /// resolved by the thread "split-reaper" (the slot is skipped, the call answered
  /// unavailable).
  static expected<std::unique_ptr<split_path>> create(
      std::vector<tensor_model> models, std::size_t queue_bytes = 64u << 20,
      std::chrono::milliseconds orphan_after = std::chrono::milliseconds(5000));
  ~split_path();

  void infer_tensor(const std::string& model, std::span<const std::byte> payload,
                    std::uint32_t deadline_us,
                    std::function<void(transport::rpc::tensor_answer)> done);
  expected<transport::rpc::split_session> open();
  void infer_split(const std::string& model, std::uint64_t call_id, std::uint64_t bytes,
                   std::uint32_t deadline_us,
                   std::function<void(transport::rpc::tensor_answer)> done);
  split_stats stats() const;

  struct impl;

 private:
  explicit split_path(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

}  // namespace spindle::actors
