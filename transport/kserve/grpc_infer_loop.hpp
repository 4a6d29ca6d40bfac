// The KServe gRPC door's ModelInfer calls, on two threads of the door's own
// over gRPC's asynchronous API (the door's other methods stay on gRPC's callback
// threads). After a lone client's call a thread polls the completion queue for
// a while instead of sleeping, as the Cap'n Proto door polls its loop: a bare
// gRPC round trip took 68-75 us through the callback API here (its two threads
// woke each other for every call) and 35-40 us so. Answers may be given on any
// thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "grpc_service.grpc.pb.h"
#include "transport/kserve/lone_call_gate.hpp"

namespace spindle::transport::kserve {

namespace grpc_door_detail {
using S = ::inference::GRPCInferenceService;
// ModelInfer marked asynchronous first: marked after a callback, gRPC 1.51
// keeps the callback's handler and never ties the method to the server.
using async_infer = S::WithAsyncMethod_ModelInfer<S::Service>;
}  // namespace grpc_door_detail

/// The door's gRPC service: ModelInfer asynchronous, every other method a callback.
using grpc_door_service = grpc_door_detail::S::WithCallbackMethod_ServerLive<
    grpc_door_detail::S::WithCallbackMethod_ServerReady<
        grpc_door_detail::S::WithCallbackMethod_ModelReady<
            grpc_door_detail::S::WithCallbackMethod_ServerMetadata<
                grpc_door_detail::S::WithCallbackMethod_ModelMetadata<
                    grpc_door_detail::S::WithCallbackMethod_RepositoryIndex<
                        grpc_door_detail::S::WithCallbackMethod_RepositoryModelLoad<
                            grpc_door_detail::S::WithCallbackMethod_RepositoryModelUnload<
                                grpc_door_detail::S::WithCallbackMethod_ModelStatistics<
                                    grpc_door_detail::S::WithCallbackMethod_ModelConfig<
                                        grpc_door_detail::async_infer>>>>>>>>>>;

class grpc_infer_loop {
 public:
  /// One call: its request, the peer, where the answer goes and `done`, to be
  /// called once from any thread with the call's status (the answer filled first).
  using handler = std::function<void(const ::inference::ModelInferRequest& request,
                                     const std::string& peer,
                                     ::inference::ModelInferResponse* answer,
                                     std::function<void(grpc::Status)> done)>;

  /// `gate` counts the door's calls (the handler enters and leaves it): a thread
  /// polls only within `poll_us` of its last event, while no call is in the
  /// door and none has overlapped another for 10 ms. `poll_us` 0: never polls.
  grpc_infer_loop(grpc_door_service& service, std::unique_ptr<grpc::ServerCompletionQueue> cq,
                  handler h, const lone_call_gate& gate, unsigned poll_us);
  ~grpc_infer_loop();  // stop() if not stopped

  /// After the server's Shutdown (which waits on the calls in flight): answers
  /// given later are dropped (their calls freed by their callbacks), no call is
  /// asked for, the queue is drained and the threads joined.
  void stop();

  struct call;  // one ModelInfer in flight (grpc_infer_loop.cpp)
  struct shared;

 private:
  void run();
  void post();  // ask gRPC for the next call
  void start_call(call* c);

  grpc_door_service& service_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  handler handler_;
  const lone_call_gate& gate_;
  const unsigned poll_us_;
  std::shared_ptr<shared> shared_;  // with the answers' callbacks
  std::vector<std::thread> threads_;
  bool stopped_ = false;
};

}  // namespace spindle::transport::kserve
