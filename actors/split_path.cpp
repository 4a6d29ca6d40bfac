#include "actors/split_path.hpp"

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "core/log.hpp"
#include "core/thread_annotations.hpp"
#include "core/thread_priority.hpp"
#include "splitrpc/inference_monitor.hpp"
#include "splitrpc/tensor_queue.hpp"
#include "transport/ucx/progress_loop.hpp"

namespace spindle::actors {

using transport::rpc::rpc_status;
using transport::rpc::tensor_answer;
using clock_type = std::chrono::steady_clock;
using done_fn = std::function<void(tensor_answer)>;

tensor_model sum_model(std::string name) {
  return {std::move(name), [](const float* batch, const std::vector<std::size_t>& sizes) {
            std::vector<std::vector<float>> out;
            for (std::size_t n : sizes) {
              double s = 0;
              for (std::size_t i = 0; i < n; ++i) s += batch[i];
              out.push_back({float(s), float(n)});
              batch += n;
            }
            return out;
          }};
}

namespace {

std::uint64_t us_since(clock_type::time_point t0) {
  return std::uint64_t(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
}

struct reply_slot {
  std::uint64_t call_id;
  done_fn done;
  clock_type::time_point t0;
  std::uint32_t deadline_us;
};

// One tensor model: its queue, monitor and executor thread.
struct model_state {
  tensor_model m;
  std::unique_ptr<splitrpc::tensor_queue> queue;
  splitrpc::inference_monitor monitor;
  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<std::uint64_t, reply_slot> replies;  // by queue slot id; guarded by mu
  bool stopping = false;                                  // guarded by mu
  std::thread exec;                                       // "tensor-<name>"

  // The slot's payload is in place and its control record known: hand it to the executor.
  void ready(std::uint64_t slot, reply_slot r) {
    (void)monitor.advance(r.call_id, splitrpc::call_state::rx_complete);
    {
      std::lock_guard lock(mu);
      replies.emplace(slot, std::move(r));
    }
    (void)queue->commit(slot);
    cv.notify_one();
  }

  void run() {
    for (;;) {
      splitrpc::tensor_queue::batch b;
      {
        std::unique_lock lock(mu);
        cv.wait_for(lock, std::chrono::milliseconds(50), [&] {
          return stopping || !(b = queue->take(m.max_batch, queue->capacity())).ids.empty();
        });
        if (stopping) return;
        if (b.ids.empty()) continue;
      }
      std::vector<std::size_t> floats;
      for (auto s : b.sizes) floats.push_back(s / sizeof(float));
      const auto t0 = clock_type::now();
      const auto* data = reinterpret_cast<const float*>(b.data);  // one contiguous span
      std::vector<std::string> errors(b.ids.size());
      auto results =
          m.compute_checked ? m.compute_checked(data, floats, errors) : m.compute(data, floats);
      const std::uint64_t compute_us = us_since(t0) / std::max<std::size_t>(1, b.ids.size());
      (void)queue->release(b);
      for (std::size_t k = 0; k < b.ids.size(); ++k)
        finish(b.ids[k], std::move(results[k]), compute_us, std::move(errors[k]));
    }
  }

  void finish(std::uint64_t slot, std::vector<float> result, std::uint64_t compute_us,
              std::string error = {}) {
    reply_slot r;
    {
      std::lock_guard lock(mu);
      auto it = replies.find(slot);
      if (it == replies.end()) return;
      r = std::move(it->second);
      replies.erase(it);
    }
    (void)monitor.advance(r.call_id, splitrpc::call_state::work_complete);
    if (!r.done) {  // a rejected call's slot: nobody to answer
      (void)monitor.advance(r.call_id, splitrpc::call_state::tx_complete);
      return;
    }
    tensor_answer a{rpc_status::ok, "", std::move(result), us_since(r.t0), compute_us};
    if (!error.empty()) {
      a = {rpc_status::bad_request, fmt::format("model '{}': {}", m.name, error)};
    } else if (r.deadline_us > 0 && a.server_us > r.deadline_us) {
      a = {rpc_status::deadline_exceeded,
           fmt::format("answered after {} us, deadline {} us", a.server_us, r.deadline_us)};
    }
    r.done(std::move(a));
    (void)monitor.advance(r.call_id, splitrpc::call_state::tx_complete);
  }
};

// A split call: its payload and its control record may arrive in either order.
struct split_call {
  clock_type::time_point first_seen = clock_type::now();
  std::uint32_t model = 0;
  bool landed = false, has_slot = false;
  std::uint64_t slot = 0, bytes = 0;
  std::string error;
  std::optional<reply_slot> control;
};

}  // namespace

struct split_path::impl {
  std::vector<std::unique_ptr<model_state>> models;
  std::optional<transport::ucx::context> ctx;
  std::optional<transport::ucx::worker> worker;
  std::optional<transport::ucx::progress_loop> rx;  // thread "ucx-progress" (split-rx role)
  spindle::mutex calls_mu;
  std::unordered_map<std::uint64_t, split_call> calls SPINDLE_GUARDED_BY(calls_mu);
  std::atomic<std::uint64_t> n_calls{0}, copied{0}, zero_copy{0};
  std::atomic<std::uint64_t> unified_ids{1ull << 63};
  std::chrono::milliseconds orphan_after{5000};
  std::mutex reap_mu;
  std::condition_variable reap_cv;
  bool stopping = false;  // guarded by reap_mu
  std::thread reaper;     // "split-reaper"

  // A payload whose control record never came holds its queue slot, and every
  // later request of that model waits behind it; a control record whose payload
  // never came waits forever. After `orphan_after` both are resolved: the slot
  // passes through the executor unanswered, the control is answered unavailable.
  void reap() {
    std::vector<std::pair<split_call, std::uint64_t>> orphans;
    {
      spindle::lock_guard lock(calls_mu);
      const auto now = clock_type::now();
      for (auto it = calls.begin(); it != calls.end();) {
        const split_call& c = it->second;
        const bool stale = now - c.first_seen > orphan_after;
        const bool payload_only = c.landed && !c.control;
        const bool control_only = c.control && !c.landed && !c.has_slot;  // no payload seen at all
        if (stale && (payload_only || control_only)) {
          orphans.emplace_back(std::move(it->second), it->first);
          it = calls.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& [c, id] : orphans) {
      if (c.control) {
        c.control->done({rpc_status::unavailable,
                         fmt::format("the payload of call {} never arrived within {} ms", id,
                                     orphan_after.count())});
      } else if (c.has_slot) {
        log::warn("split path: payload of call {} had no control record within {} ms; dropped", id,
                  orphan_after.count());
        models[c.model]->ready(c.slot, {id, nullptr, c.first_seen, 0});
      }
    }
  }

  void reap_loop() {
    std::unique_lock lock(reap_mu);
    while (!stopping) {
      reap_cv.wait_for(lock, std::chrono::milliseconds(100));
      lock.unlock();
      reap();
      lock.lock();
    }
  }

  model_state* find(const std::string& name) {
    for (auto& m : models) {
      if (m->m.name == name) return m.get();
    }
    return nullptr;
  }

  // Both halves present (payload landed, control known): pass to the executor.
  // Takes the call out of `calls` when both halves are in.
  std::optional<split_call> take_complete(std::uint64_t call_id) {
    spindle::lock_guard lock(calls_mu);
    auto it = calls.find(call_id);
    if (it == calls.end() || !it->second.landed || !it->second.control) return std::nullopt;
    split_call c = std::move(it->second);
    calls.erase(it);
    return c;
  }

  void try_ready(std::uint64_t call_id) {
    auto taken = take_complete(call_id);
    if (!taken) return;
    split_call& c = *taken;
    if (c.error.empty() && (c.bytes == 0 || c.bytes % sizeof(float) != 0)) {
      c.error = fmt::format("payload of {} bytes is not whole float32s", c.bytes);
    }
    if (!c.error.empty()) {
      done_fn done = std::move(c.control->done);
      // A reserved slot still passes through the executor (the queue stays in
      // order); its result goes nowhere.
      if (c.has_slot)
        models[c.model]->ready(c.slot, {c.control->call_id, nullptr, c.control->t0, 0});
      const bool full =
          c.error.starts_with("tensor queue:") && c.error.find("free") != std::string::npos;
      return done({full ? rpc_status::overloaded : rpc_status::bad_request, c.error});
    }
    models[c.model]->ready(c.slot, std::move(*c.control));
  }

  // Runs on the UCX progress thread for each payload message.
  void on_payload(const transport::ucx::worker::bulk_message& msg) {
    transport::rpc::split_header h;
    if (msg.header.size() != 12) return;  // not ours; a rendezvous payload is dropped
    std::memcpy(&h.call_id, msg.header.data(), 8);
    std::memcpy(&h.model, msg.header.data() + 8, 4);
    std::string error;
    splitrpc::tensor_queue::slot slot;
    if (h.model >= models.size()) {
      error = fmt::format("payload for model index {} of {}", h.model, models.size());
    } else if (auto s = models[h.model]->queue->reserve(msg.length); !s) {
      error = s.error().message();
    } else {
      slot = *s;
    }
    if (error.empty() && !msg.rndv) {
      // Eager: one copy into the queue, finished before the call is marked landed
      // (the control record may arrive on another thread at any moment, and
      // try_ready hands the slot to the executor as soon as both halves are seen).
      std::memcpy(slot.data, msg.data.data(), msg.length);
      copied += msg.length;
    }
    {
      spindle::lock_guard lock(calls_mu);
      auto& c = calls[h.call_id];
      c.model = h.model, c.bytes = msg.length, c.error = error, c.slot = slot.id,
      c.has_slot = error.empty();
      c.landed = !error.empty() || !msg.rndv;
    }
    if (error.empty() && msg.rndv) {  // pulled by UCX straight into the queue slot
      zero_copy += msg.length;
      const std::uint64_t id = h.call_id;
      (void)worker->receive_rndv(msg.rndv_desc, slot.data, msg.length, [this, id](status s) {
        {
          spindle::lock_guard lock(calls_mu);
          auto& c = calls[id];
          c.landed = true;
          if (!s) c.error = s.message();
        }
        try_ready(id);
      });
      return;
    }
    try_ready(h.call_id);
  }
};

expected<std::unique_ptr<split_path>> split_path::create(std::vector<tensor_model> models,
                                                         std::size_t queue_bytes,
                                                         std::chrono::milliseconds orphan_after) {
  auto i = std::make_unique<impl>();
  i->orphan_after = orphan_after;
  for (auto& m : models) {
    auto st = std::make_unique<model_state>();
    SPINDLE_ASSIGN_OR_RETURN(st->queue, splitrpc::tensor_queue::create(queue_bytes));
    st->m = std::move(m);
    i->models.push_back(std::move(st));
  }
  SPINDLE_ASSIGN_OR_RETURN(auto ctx, transport::ucx::context::create());
  i->ctx.emplace(std::move(ctx));
  SPINDLE_ASSIGN_OR_RETURN(auto w, transport::ucx::worker::create(*i->ctx));
  i->worker.emplace(std::move(w));
  impl* raw = i.get();
  SPINDLE_TRY(i->worker->set_bulk_handler(
      transport::rpc::split_am_id,
      [raw](const transport::ucx::worker::bulk_message& m) { raw->on_payload(m); }));
  i->rx.emplace(*i->worker);
  i->reaper = std::thread([raw] { raw->reap_loop(); });
  pthread_setname_np(i->reaper.native_handle(), "split-reaper");
  for (auto& m : i->models) {
    model_state* ms = m.get();
    ms->exec = std::thread([ms] {
      lower_to_compute_priority();
      ms->run();
    });
    pthread_setname_np(ms->exec.native_handle(), ("tensor-" + ms->m.name).substr(0, 15).c_str());
  }
  return std::unique_ptr<split_path>(new split_path(std::move(i)));
}

split_path::split_path(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

split_path::~split_path() {
  impl_->rx.reset();  // no more payloads
  {
    std::lock_guard lock(impl_->reap_mu);
    impl_->stopping = true;
  }
  impl_->reap_cv.notify_all();
  impl_->reaper.join();
  for (auto& m : impl_->models) {
    {
      std::lock_guard lock(m->mu);
      m->stopping = true;
    }
    m->cv.notify_all();
    m->exec.join();
  }
}

void split_path::infer_tensor(const std::string& model, std::span<const std::byte> payload,
                              std::uint32_t deadline_us, done_fn done) {
  model_state* m = impl_->find(model);
  if (m == nullptr)
    return done({rpc_status::bad_request, fmt::format("no tensor model '{}'", model)});
  if (payload.empty() || payload.size() % sizeof(float) != 0) {
    return done({rpc_status::bad_request,
                 fmt::format("payload of {} bytes is not whole float32s", payload.size())});
  }
  auto slot = m->queue->reserve(payload.size());
  if (!slot) return done({rpc_status::overloaded, slot.error().message()});
  std::memcpy(slot->data, payload.data(),
              payload.size());  // unified path: one copy out of the message
  impl_->copied += payload.size();
  ++impl_->n_calls;
  const std::uint64_t call = impl_->unified_ids++;
  (void)m->monitor.open(call);
  m->ready(slot->id, {call, std::move(done), clock_type::now(), deadline_us});
}

expected<transport::rpc::split_session> split_path::open() {
  SPINDLE_ASSIGN_OR_RETURN(auto address, impl_->worker->address());
  transport::rpc::split_session s;
  s.worker_address = std::move(address);
  for (auto& m : impl_->models) s.models.push_back(m->m.name);
  s.max_payload = impl_->models.empty() ? 0 : impl_->models[0]->queue->capacity();
  return s;
}

void split_path::infer_split(const std::string& model, std::uint64_t call_id, std::uint64_t bytes,
                             std::uint32_t deadline_us, done_fn done) {
  model_state* m = impl_->find(model);
  if (m == nullptr)
    return done({rpc_status::bad_request, fmt::format("no tensor model '{}'", model)});
  if (auto s = m->monitor.open(call_id); !s) return done({rpc_status::bad_request, s.message()});
  ++impl_->n_calls;
  {
    spindle::lock_guard lock(impl_->calls_mu);
    auto& c = impl_->calls[call_id];
    if (c.landed && c.bytes != bytes)
      c.error = fmt::format("control says {} bytes, payload has {}", bytes, c.bytes);
    c.control = reply_slot{call_id, std::move(done), clock_type::now(), deadline_us};
  }
  impl_->try_ready(call_id);
}

split_stats split_path::stats() const {
  return {impl_->n_calls.load(), impl_->copied.load(), impl_->zero_copy.load()};
}

}  // namespace spindle::actors
