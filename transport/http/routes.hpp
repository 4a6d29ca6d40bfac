// The event server's routes: a method and a path template per handler, matched
// in order by hand (path_template.hpp, never a regex); a handler that throws
// answers 500, a path no route takes 404, both with bodies the server fills.
#pragma once

#include <httplib.h>

#include <functional>
#include <string>
#include <vector>

#include "transport/http/path_template.hpp"

namespace spindle::transport::http {

/// A route's handler; `args` are the path template's captures (path_template.hpp).
using handler =
    std::function<void(const httplib::Request&, const path_args& args, httplib::Response&)>;
using simple_handler = std::function<void(const httplib::Request&, httplib::Response&)>;
/// Fills the body of a response the server answers itself (404, 408, 500, ...).
using error_body_fn = std::function<void(int status, const std::string& why, httplib::Response&)>;

class route_table {
 public:
  /// Adds a route; throws std::invalid_argument for a pattern written wrongly.
  void add(std::string method, const std::string& pattern, handler h);
  /// The first matching route's answer; `server` names the server in logs.
  httplib::Response answer(const httplib::Request& req, const std::string& server,
                           const error_body_fn& error_body) const;

 private:
  struct route {
    std::string method;
    path_template path;
    handler h;
  };
  std::vector<route> routes_;
};

}  // namespace spindle::transport::http
