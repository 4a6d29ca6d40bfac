// Which door a call came through ("capnp", "http 127.0.0.1:5000", "grpc ..."),
// set by the door on the thread that hands the call to the gateway, so the
// gateway can log who changed a tunable or loaded a model, and the access log
// can name the door, without every service signature carrying it.
#pragma once

#include <string>

namespace spindle {

/// The origin of the calls made on this thread while it lives (nests).
class scoped_call_origin {
 public:
  explicit scoped_call_origin(std::string origin);
  ~scoped_call_origin();
  scoped_call_origin(const scoped_call_origin&) = delete;
  scoped_call_origin& operator=(const scoped_call_origin&) = delete;

 private:
  std::string previous_;
};

/// Sets this thread's origin for good (a door's own threads, set once per call
/// or once per thread).
void set_call_origin(std::string origin);

/// This thread's call origin; "in-process" when no door set one.
const std::string& call_origin();

}  // namespace spindle
