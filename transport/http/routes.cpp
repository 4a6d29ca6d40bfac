#include "transport/http/routes.hpp"

#include <stdexcept>

#include "core/log.hpp"

namespace spindle::transport::http {

void route_table::add(std::string method, const std::string& pattern, handler h) {
  auto t = path_template::parse(pattern);
  if (!t) throw std::invalid_argument(t.error().message());  // a route written wrongly
  routes_.push_back({std::move(method), std::move(*t), std::move(h)});
}

httplib::Response route_table::answer(const httplib::Request& req, const std::string& server,
                                      const error_body_fn& error_body) const {
  httplib::Response res;
  for (const auto& r : routes_) {
    if (r.method != req.method) continue;
    auto args = r.path.match(req.path);
    if (!args) continue;
    try {
      r.h(req, *args, res);
    } catch (const std::exception& e) {
      log::error("{}: {} {}: {}", server, req.method, req.path.substr(0, 128), e.what());
      res = httplib::Response{};
      res.status = 500;
      if (error_body) error_body(500, e.what(), res);
    }
    return res;
  }
  res.status = 404;
  if (error_body) error_body(404, "no such path: " + req.path.substr(0, 128), res);
  if (res.body.empty()) res.set_content("not found\n", "text/plain");
  return res;
}

}  // namespace spindle::transport::http
