// Error values for every Spindle module: a `status` (code + message naming the
// file, field and value) and `expected<T>`, shaped like C++23 std::expected.
// Plain values; thread-safe to copy and pass between threads.
#pragma once

#include <fmt/format.h>

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace spindle {

enum class errc {
  ok,
  invalid_argument,    // the caller passed a bad value (flag, option, id)
  not_found,           // a file, key or name does not exist
  io_error,            // the OS refused a read, write or map
  corrupt_data,        // stored bytes fail a header, size, bound or checksum check
  unsupported,         // a valid but unsupported value (dtype, format version)
  unavailable,         // a peer, shard or server cannot be reached (died, timed out)
  resource_exhausted,  // a capacity or memory budget cannot hold what was asked
  internal,            // a broken invariant inside Spindle
};

/// Stable lower-case name of an error code ("corrupt_data").
std::string_view to_string(errc code);

/// Result of an operation that returns nothing: ok, or a code and a message.
class [[nodiscard]] status {
 public:
  status() = default;
  status(errc code, std::string message) : code_(code), message_(std::move(message)) {}

  static status ok() { return {}; }
  bool is_ok() const { return code_ == errc::ok; }
  explicit operator bool() const { return is_ok(); }
  errc code() const { return code_; }
  const std::string& message() const { return message_; }
  /// "corrupt_data: indices.npy: ..." for logs and command-line output.
  std::string to_string() const;
  /// Prefixes the message with context ("graph dir/: ") and returns *this.
  status with_context(std::string_view context) &&;

  /// Field list for CAF's inspectors (a status crosses actors inside replies);
  /// a template, so this header needs no CAF.
  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, status& x) {
    return f(x.code_, x.message_);
  }

 private:
  errc code_ = errc::ok;
  std::string message_;
};

/// Builds an error status with a fmt-formatted message.
template <class... Args>
status make_error(errc code, fmt::format_string<Args...> f, Args&&... args) {
  return status(code, fmt::format(f, std::forward<Args>(args)...));
}

/// A value of T, or the status explaining why there is none.
template <class T>
class [[nodiscard]] expected {
 public:
  expected(T value) : v_(std::move(value)) {}
  expected(status error) : v_(std::move(error)) { assert(!std::get<1>(v_).is_ok()); }

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  /// The error; only valid when !has_value().
  const status& error() const& { return std::get<1>(v_); }
  status&& error() && { return std::get<1>(std::move(v_)); }
  /// ok() when a value is held, else the error: for calls whose value is not needed.
  status error_or_ok() const { return has_value() ? status::ok() : error(); }

 private:
  std::variant<T, status> v_;
};

}  // namespace spindle

#define SPINDLE_CONCAT_INNER(a, b) a##b
#define SPINDLE_CONCAT(a, b) SPINDLE_CONCAT_INNER(a, b)

/// Returns the status from the enclosing function when `expr` is not ok.
#define SPINDLE_TRY(expr)                                         \
  do {                                                            \
    ::spindle::status spindle_try_status_ = (expr);               \
    if (!spindle_try_status_.is_ok()) return spindle_try_status_; \
  } while (0)

#define SPINDLE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)  \
  auto tmp = (expr);                                   \
  if (!tmp.has_value()) return std::move(tmp).error(); \
  lhs = std::move(tmp).value()

/// `SPINDLE_ASSIGN_OR_RETURN(auto x, f());` unwraps an expected or returns its error.
#define SPINDLE_ASSIGN_OR_RETURN(lhs, expr) \
  SPINDLE_ASSIGN_OR_RETURN_IMPL(SPINDLE_CONCAT(spindle_expected_, __LINE__), lhs, expr)
