#include "serving/admission.hpp"

#include <algorithm>
#include <cmath>

namespace spindle::serving {
namespace {

std::int64_t ticks(admission_control::clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

admission_control::admission_control(admission_options o) {
  spindle::lock_guard lock(mu_);
  o_ = o;
  window_start_ = clock::now();
  window_end_ns_ = ticks(window_start_ + o_.window);
  recompute_limit();
}

bool admission_control::try_admit() {
  const std::size_t limit = limit_.load(std::memory_order_relaxed);
  if (in_flight_.fetch_add(1, std::memory_order_relaxed) >= limit) {
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    refused_in_window_.fetch_add(1, std::memory_order_relaxed);
    refused_total_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void admission_control::complete(clock::time_point now) {
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
  done_in_window_.fetch_add(1, std::memory_order_relaxed);
  if (ticks(now) < window_end_ns_.load(std::memory_order_relaxed)) return;
  if (!mu_.try_lock()) return;  // another thread is closing this window
  if (ticks(now) >= window_end_ns_.load(std::memory_order_relaxed)) roll(now);
  mu_.unlock();
}

// Capacity tracking. A window that refused calls ran at the limit, so its
// completion rate is what the model does now: capacity follows it (halfway per
// window, so one odd window cannot halve the queue). A window that refused
// nothing only shows the offered load, a lower bound: capacity keeps the larger.
// This lets capacity fall when the model slows (co-located work, a slower
// member) and rise as soon as more gets through, since while the measured time
// in the server stays under the budget the limit admits more than it measured.
void admission_control::roll(clock::time_point now) {
  const double seconds = std::chrono::duration<double>(now - window_start_).count();
  const auto done = done_in_window_.exchange(0, std::memory_order_relaxed);
  const auto refused = refused_in_window_.exchange(0, std::memory_order_relaxed);
  const double rate = seconds > 0 ? double(done) / seconds : 0;
  if (done < o_.min_window_calls && refused == 0) {
    // too few calls to measure anything: capacity stays as it was
  } else if (capacity_ == 0) {
    capacity_ = rate;
  } else if (refused > 0) {
    capacity_ = 0.5 * capacity_ + 0.5 * rate;
  } else {
    capacity_ = std::max(capacity_, rate);
  }
  window_start_ = now;
  window_end_ns_.store(ticks(now + o_.window), std::memory_order_relaxed);
  recompute_limit();
}

void admission_control::recompute_limit() {
  std::size_t limit = o_.max_queue;
  if (o_.slo.count() > 0 && capacity_ > 0) {
    const double budget_s = std::chrono::duration<double>(o_.slo).count() * o_.queue_share;
    const double by_slo = std::ceil(capacity_ * budget_s);
    limit = std::clamp<std::size_t>(std::size_t(by_slo), std::min(o_.floor, o_.max_queue),
                                    o_.max_queue);
  } else if (o_.slo.count() > 0) {
    limit = std::min(o_.floor, o_.max_queue);  // capacity unknown yet: start at the floor
  }
  limit_.store(std::max<std::size_t>(1, limit), std::memory_order_relaxed);
}

double admission_control::capacity_rps() const {
  spindle::lock_guard lock(mu_);
  return capacity_;
}

void admission_control::set_slo(std::chrono::microseconds slo) {
  spindle::lock_guard lock(mu_);
  o_.slo = slo;
  recompute_limit();
}

void admission_control::set_max_queue(std::size_t max_queue) {
  spindle::lock_guard lock(mu_);
  o_.max_queue = max_queue;
  recompute_limit();
}

void admission_control::set_floor(std::size_t floor) {
  spindle::lock_guard lock(mu_);
  o_.floor = floor;
  recompute_limit();
}

admission_options admission_control::options() const {
  spindle::lock_guard lock(mu_);
  return o_;
}

}  // namespace spindle::serving
