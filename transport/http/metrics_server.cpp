#include "transport/http/metrics_server.hpp"

#include "transport/http/event_server.hpp"
#include "transport/rpc/endpoint.hpp"

namespace spindle::transport::http {

struct metrics_server::impl {
  std::unique_ptr<event_server> server;
};

expected<std::unique_ptr<metrics_server>> metrics_server::start(const std::string& listen,
                                                                std::function<std::string()> render,
                                                                std::size_t max_connections) {
  SPINDLE_ASSIGN_OR_RETURN(auto where, parse_host_port(listen, "--metrics"));
  event_server_options o;
  o.host = where.host;
  o.port = int(where.port);
  o.name = "metrics-http";
  o.workers = 2;  // a scrape renders in well under a millisecond; slow clients hold none
  o.max_body_bytes = 1 << 20;
  o.max_connections = max_connections;
  o.header_timeout = o.body_timeout = std::chrono::milliseconds(2000);
  auto bound = event_server::bind(o);
  if (!bound) return std::move(bound).error().with_context("--metrics " + listen + ": ");
  auto i = std::make_unique<impl>();
  i->server = std::move(*bound);
  i->server->get("/metrics", [render](const httplib::Request&, httplib::Response& res) {
    res.set_content(render(), "text/plain; version=0.0.4");
  });
  i->server->start();
  const int port = i->server->port();
  return std::unique_ptr<metrics_server>(new metrics_server(std::move(i), port));
}

metrics_server::metrics_server(std::unique_ptr<impl> i, int port)
    : impl_(std::move(i)), port_(port) {}

metrics_server::~metrics_server() = default;

}  // namespace spindle::transport::http
