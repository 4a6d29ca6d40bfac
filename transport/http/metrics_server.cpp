#include "transport/http/metrics_server.hpp"

#include <httplib.h>

#include <thread>

#include "transport/rpc/endpoint.hpp"

namespace spindle::transport::http {
namespace {
constexpr std::size_t kMetricsWorkers = 32;  // threads "metrics-http" serves scrapes on
}  // namespace

struct metrics_server::impl {
  httplib::Server server;
  std::thread thread;  // "metrics-http"
};

expected<std::unique_ptr<metrics_server>> metrics_server::start(
    const std::string& listen, std::function<std::string()> render) {
  SPINDLE_ASSIGN_OR_RETURN(auto where, parse_host_port(listen, "--metrics"));
  const std::string host = where.host;
  const int port = int(where.port);
  auto i = std::make_unique<impl>();
  // Slow or half-sent requests must not hold the workers a scrape needs: short
  // read/keep-alive timeouts and more workers than a handful of stuck sockets.
  i->server.set_read_timeout(0, 100'000);
  i->server.set_write_timeout(1, 0);
  i->server.set_keep_alive_timeout(1);
  i->server.new_task_queue = [] { return new httplib::ThreadPool(kMetricsWorkers); };
  i->server.Get("/metrics", [render](const httplib::Request&, httplib::Response& res) {
    res.set_content(render(), "text/plain; version=0.0.4");
  });
  const int bound = port == 0 ? i->server.bind_to_any_port(host)
                              : (i->server.bind_to_port(host, port) ? port : -1);
  if (bound < 0) return make_error(errc::unavailable, "--metrics {}: cannot bind", listen);
  impl* raw = i.get();
  i->thread = std::thread([raw] { raw->server.listen_after_bind(); });
  pthread_setname_np(i->thread.native_handle(), "metrics-http");
  return std::unique_ptr<metrics_server>(new metrics_server(std::move(i), bound));
}

metrics_server::metrics_server(std::unique_ptr<impl> i, int port)
    : impl_(std::move(i)), port_(port) {}

metrics_server::~metrics_server() {
  impl_->server.stop();
  impl_->thread.join();
}

}  // namespace spindle::transport::http
