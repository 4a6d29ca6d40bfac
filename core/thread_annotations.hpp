// Clang's thread-safety analysis (-Wthread-safety) for state that mutexes
// guard: SPINDLE_GUARDED_BY(mu) on a field, SPINDLE_REQUIRES(mu) on a function
// that expects mu held, and spindle::mutex / shared_mutex with scoped lockers
// the analysis understands (libstdc++'s own mutexes carry no annotations). The
// macros are empty for other compilers; `tests/thread_safety` compiles the
// annotated files with clang and fails on any warning.
#pragma once

#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define SPINDLE_TSA(x) __attribute__((x))
#else
#define SPINDLE_TSA(x)
#endif

#define SPINDLE_CAPABILITY(name) SPINDLE_TSA(capability(name))
#define SPINDLE_SCOPED_CAPABILITY SPINDLE_TSA(scoped_lockable)
#define SPINDLE_GUARDED_BY(mu) SPINDLE_TSA(guarded_by(mu))
#define SPINDLE_PT_GUARDED_BY(mu) SPINDLE_TSA(pt_guarded_by(mu))
#define SPINDLE_REQUIRES(...) SPINDLE_TSA(requires_capability(__VA_ARGS__))
#define SPINDLE_REQUIRES_SHARED(...) SPINDLE_TSA(requires_shared_capability(__VA_ARGS__))
#define SPINDLE_ACQUIRE(...) SPINDLE_TSA(acquire_capability(__VA_ARGS__))
#define SPINDLE_ACQUIRE_SHARED(...) SPINDLE_TSA(acquire_shared_capability(__VA_ARGS__))
#define SPINDLE_RELEASE(...) SPINDLE_TSA(release_capability(__VA_ARGS__))
#define SPINDLE_RELEASE_SHARED(...) SPINDLE_TSA(release_shared_capability(__VA_ARGS__))
#define SPINDLE_RELEASE_GENERIC(...) SPINDLE_TSA(release_generic_capability(__VA_ARGS__))
#define SPINDLE_TRY_ACQUIRE(...) SPINDLE_TSA(try_acquire_capability(__VA_ARGS__))
#define SPINDLE_EXCLUDES(...) SPINDLE_TSA(locks_excluded(__VA_ARGS__))
#define SPINDLE_NO_THREAD_SAFETY_ANALYSIS SPINDLE_TSA(no_thread_safety_analysis)

namespace spindle {

/// std::mutex the analysis knows (also a standard Lockable, for condition_variable_any).
class SPINDLE_CAPABILITY("mutex") mutex {
 public:
  void lock() SPINDLE_ACQUIRE() { m_.lock(); }
  void unlock() SPINDLE_RELEASE() { m_.unlock(); }
  bool try_lock() SPINDLE_TRY_ACQUIRE(true) { return m_.try_lock(); }
  std::mutex& native() { return m_; }

 private:
  std::mutex m_;
};

/// std::shared_mutex the analysis knows.
class SPINDLE_CAPABILITY("shared_mutex") shared_mutex {
 public:
  void lock() SPINDLE_ACQUIRE() { m_.lock(); }
  void unlock() SPINDLE_RELEASE() { m_.unlock(); }
  void lock_shared() SPINDLE_ACQUIRE_SHARED() { m_.lock_shared(); }
  void unlock_shared() SPINDLE_RELEASE_SHARED() { m_.unlock_shared(); }

 private:
  std::shared_mutex m_;
};

/// Holds `mu` exclusively for its scope.
template <class Mutex>
class SPINDLE_SCOPED_CAPABILITY lock_guard {
 public:
  explicit lock_guard(Mutex& mu) SPINDLE_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~lock_guard() SPINDLE_RELEASE() { mu_.unlock(); }
  lock_guard(const lock_guard&) = delete;
  lock_guard& operator=(const lock_guard&) = delete;

 private:
  Mutex& mu_;
};

/// Holds `mu` shared for its scope.
class SPINDLE_SCOPED_CAPABILITY shared_lock {
 public:
  explicit shared_lock(shared_mutex& mu) SPINDLE_ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
  ~shared_lock() SPINDLE_RELEASE_GENERIC() { mu_.unlock_shared(); }
  shared_lock(const shared_lock&) = delete;
  shared_lock& operator=(const shared_lock&) = delete;

 private:
  shared_mutex& mu_;
};

}  // namespace spindle
