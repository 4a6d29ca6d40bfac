// The gRPC door's ModelInfer loop (grpc_infer_loop.hpp).
#include "transport/kserve/grpc_infer_loop.hpp"

#include <chrono>

namespace spindle::transport::kserve {

namespace pb = ::inference;

struct grpc_infer_loop::call {
  grpc::ServerContext ctx;
  pb::ModelInferRequest request;
  pb::ModelInferResponse answer;
  grpc::ServerAsyncResponseWriter<pb::ModelInferResponse> writer{&ctx};
  bool started = false;   // handed to the handler (guarded by shared::mu)
  bool answered = false;  // the next tag is the answer's, sent
};

// What the answers' callbacks share with the loop: the calls not yet done, and
// whether answers may still be sent (not once the queue is shut down). A call
// handed to the handler is freed by the loop once its answer is sent, or, when
// the door stopped first, by its answer's callback (the handler writes the
// answer into it before that), so a late answer never writes freed memory.
struct grpc_infer_loop::shared {
  std::mutex mu;
  bool open = true;
  std::unordered_set<call*> calls;
};

namespace {

// A door that had two calls in it at once within this long does not poll.
constexpr auto kCrowdMemory = std::chrono::milliseconds(10);
// Threads taking calls: as many as gRPC's callback API ran on these 2 cores (one
// thread alone served 3-7% fewer calls a second with 4 and 32 clients).
constexpr int kThreads = 2;

}  // namespace

grpc_infer_loop::grpc_infer_loop(grpc_door_service& service,
                                 std::unique_ptr<grpc::ServerCompletionQueue> cq, handler h,
                                 const lone_call_gate& gate, unsigned poll_us)
    : service_(service),
      cq_(std::move(cq)),
      handler_(std::move(h)),
      gate_(gate),
      poll_us_(poll_us),
      shared_(std::make_shared<shared>()) {
  for (int t = 0; t < kThreads; ++t) post();  // a call waiting for each thread
  for (int t = 0; t < kThreads; ++t) threads_.emplace_back([this] { run(); });
}

grpc_infer_loop::~grpc_infer_loop() { stop(); }

void grpc_infer_loop::post() {
  std::lock_guard lock(shared_->mu);  // not once stop() shuts the queue down
  if (!shared_->open) return;
  auto* c = new call;
  shared_->calls.insert(c);
  service_.RequestModelInfer(&c->ctx, &c->request, &c->writer, cq_.get(), cq_.get(), c);
}

void grpc_infer_loop::start_call(call* c) {
  auto sh = shared_;
  {
    std::lock_guard lock(sh->mu);
    c->started = true;
  }
  handler_(c->request, c->ctx.peer(), &c->answer, [sh, c](grpc::Status st) {
    std::lock_guard lock(sh->mu);
    if (!sh->open) {  // the door has stopped: the call was cancelled; free it here
      sh->calls.erase(c);
      delete c;
      return;
    }
    c->answered = true;
    if (st.ok())
      c->writer.Finish(c->answer, st, c);
    else
      c->writer.FinishWithError(st, c);
  });
}

void grpc_infer_loop::run() {
  using clock = std::chrono::steady_clock;
  auto last_event = clock::now(), last_crowd = clock::now();
  void* tag = nullptr;
  bool ok = false;
  for (;;) {
    const auto now = clock::now();
    if (gate_.in_door() > 1) last_crowd = now;
    const bool poll = poll_us_ > 0 && gate_.in_door() == 0 &&
                      now - last_event < std::chrono::microseconds(poll_us_) &&
                      now - last_crowd > kCrowdMemory;
    if (poll) {
      const auto st = cq_->AsyncNext(&tag, &ok, gpr_time_0(GPR_CLOCK_MONOTONIC));
      if (st == grpc::CompletionQueue::SHUTDOWN) return;
      if (st == grpc::CompletionQueue::TIMEOUT) {
        std::this_thread::yield();
        continue;
      }
    } else if (!cq_->Next(&tag, &ok)) {
      return;
    }
    last_event = clock::now();
    auto* c = static_cast<call*>(tag);
    if (c->answered || !ok) {  // sent (or cancelled), or no call: the server stopping
      std::lock_guard lock(shared_->mu);
      shared_->calls.erase(c);
      delete c;
      continue;
    }
    post();  // before this call's work: the next call is read meanwhile
    start_call(c);
  }
}

void grpc_infer_loop::stop() {
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard lock(shared_->mu);
    shared_->open = false;
  }
  cq_->Shutdown();
  for (auto& t : threads_) t.join();
  std::lock_guard lock(shared_->mu);
  for (auto it = shared_->calls.begin(); it != shared_->calls.end();) {
    if ((*it)->started) {  // its answer is still coming: freed by its callback
      ++it;
      continue;
    }
    delete *it;
    it = shared_->calls.erase(it);
  }
}

}  // namespace spindle::transport::kserve
