// Answers handed to the door's event-loop thread from other threads, many for
// one wake-up: a producer queues (call id, answer) and wakes the loop only when
// no wake-up is pending; the loop takes every queued answer at once and fulfils
// each call's promise on its own thread. With a cross-thread fulfiller per call
// the loop woke once per answer, and each answer went out in a write of its own;
// a batch's answers now reach the loop in one or two turns and leave together
// (coalescing_stream). Producers hold no kj object: an answer posted after the
// loop closed the mailbox (the door stopping) is dropped.
#pragma once

#include <kj/async.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace spindle::transport::rpc {

/// Calls this event-loop thread's mailboxes still owe an answer, and every call
/// they have taken (a stopping door runs its loop until none is owed and no call
/// has come for a while).
inline thread_local std::size_t answers_owed_on_this_thread = 0;
inline thread_local std::uint64_t calls_taken_on_this_thread = 0;
/// Of those, the calls answered inline (refused: forget()).
inline thread_local std::uint64_t calls_refused_on_this_thread = 0;
/// The most answers owed at once since the door's loop last reset it.
inline thread_local std::size_t answers_owed_peak = 0;
/// Fulfilled (and cleared) when this thread's mailboxes take a call or give
/// answers: a door polling after activity waits on it to block (door_loop.cpp).
inline thread_local kj::PromiseFulfiller<void>* door_activity = nullptr;
inline void note_door_activity() {
  if (auto* f = door_activity) {
    door_activity = nullptr;
    f->fulfill();
  }
}

template <class T>
class answer_mailbox final : private kj::TaskSet::ErrorHandler {
  // What producers share: the queued answers and the loop's pending wake-up.
  struct queue {
    std::mutex mu;
    std::vector<std::pair<std::uint64_t, T>> items;
    kj::Own<kj::CrossThreadPromiseFulfiller<void>> wake;  // null: a wake-up is on its way
    bool closed = false;

    void post(std::uint64_t id, T v) {
      std::unique_lock lock(mu);
      if (closed) return;
      items.emplace_back(id, std::move(v));
      if (!wake) return;
      auto w = kj::mv(wake);
      lock.unlock();
      w->fulfill();
    }
  };

 public:
  /// On the loop thread.
  answer_mailbox() : q_(std::make_shared<queue>()) { arm(); }
  ~answer_mailbox() noexcept(false) {
    answers_owed_on_this_thread -= waiting_.size();
    std::lock_guard lock(q_->mu);
    q_->closed = true;
    q_->items.clear();
  }
  answer_mailbox(const answer_mailbox&) = delete;
  answer_mailbox& operator=(const answer_mailbox&) = delete;

  struct expected_answer {
    std::uint64_t id;
    kj::Promise<T> promise;
    std::function<void(T)> post;  // any thread, once
  };
  /// On the loop thread: a call's promise and the callback any thread may call once.
  expected_answer expect() {
    auto paf = kj::newPromiseAndFulfiller<T>();
    const std::uint64_t id = next_id_++;
    waiting_.emplace(id, kj::mv(paf.fulfiller));
    if (++answers_owed_on_this_thread > answers_owed_peak)
      answers_owed_peak = answers_owed_on_this_thread;
    ++calls_taken_on_this_thread;
    note_door_activity();
    return {id, kj::mv(paf.promise), [q = q_, id](T v) { q->post(id, std::move(v)); }};
  }
  /// On the loop thread: a call answered without the mailbox (refused inline).
  void forget(std::uint64_t id) {
    const std::size_t erased = waiting_.erase(id);
    answers_owed_on_this_thread -= erased;
    calls_refused_on_this_thread += erased;
  }

 private:
  void arm() {
    auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
    {
      std::lock_guard lock(q_->mu);
      if (q_->items.empty()) q_->wake = kj::mv(paf.fulfiller);
      else paf.fulfiller->fulfill();  // answers came while the last batch was taken
    }
    tasks_.add(paf.promise.then([this] { drain(); }));
  }

  void drain() {
    std::vector<std::pair<std::uint64_t, T>> got;
    {
      std::lock_guard lock(q_->mu);
      got.swap(q_->items);
    }
    arm();  // before fulfilling: answers posted meanwhile wake the loop again
    for (auto& [id, v] : got) {
      auto it = waiting_.find(id);
      if (it == waiting_.end()) continue;
      it->second->fulfill(kj::mv(v));  // a promise the call dropped ignores it
      waiting_.erase(it);
      --answers_owed_on_this_thread;
    }
    if (!got.empty()) note_door_activity();
  }

  void taskFailed(kj::Exception&&) override {}  // a wake-up cancelled as the loop ends

  std::shared_ptr<queue> q_;
  std::map<std::uint64_t, kj::Own<kj::PromiseFulfiller<T>>> waiting_;
  std::uint64_t next_id_ = 0;
  kj::TaskSet tasks_{*this};  // last: its tasks capture `this`
};

}  // namespace spindle::transport::rpc
