#include "transport/kserve/http_server.hpp"

#include <httplib.h>
#include <pthread.h>

#include <charconv>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/json_depth.hpp"
#include "core/log.hpp"
#include "transport/http/event_server.hpp"
#include "transport/kserve/graph_json.hpp"
#include "transport/kserve/infer_json.hpp"
#include "transport/kserve/triton_extensions.hpp"
#include "transport/rpc/endpoint.hpp"

namespace spindle::transport::kserve {
namespace {

using json = nlohmann::json;
constexpr const char* kJson = "application/json";
// Path templates (transport/http/path_template.hpp), matched by hand: [1] the
// model, [2] its version ("" when the path names none).
constexpr const char* kModelPath = "/v2/models/{}[/versions/{}]";

void send_error(httplib::Response& res, int status, std::string_view message) {
  res.status = status;
  res.set_content(error_body(message), kJson);
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json metadata_json(const model_metadata& m) {
  auto tensors = [](const std::vector<tensor_metadata>& ts) {
    json out = json::array();
    for (const auto& t : ts) {
      json x = {{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}};
      if (t.optional) x["parameters"] = {{"optional", true}};
      out.push_back(std::move(x));
    }
    return out;
  };
  return {{"name", m.name},
          {"versions", m.versions},
          {"platform", m.platform},
          {"inputs", tensors(m.inputs)},
          {"outputs", tensors(m.outputs)}};
}

std::optional<std::size_t> header_length(const httplib::Request& req, bool& bad) {
  bad = false;
  if (!req.has_header(kHeaderLength)) return std::nullopt;
  const std::string v = req.get_header_value(kHeaderLength);
  std::size_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  bad = v.empty() || ec != std::errc() || p != v.data() + v.size();
  return n;
}

void handle_infer(door& d, const httplib::Request& req, const http::path_args& args,
                  httplib::Response& res) {
  bool bad = false;
  const auto head = header_length(req, bad);
  if (bad)
    return send_error(res, 400,
                      fmt::format("{}: '{}' is not a byte count", kHeaderLength,
                                  req.get_header_value(kHeaderLength).substr(0, 32)));
  auto parsed = parse_infer_request(req.body, head);
  if (!parsed) return send_error(res, 400, parsed.error().message());
  parsed->model = args[1];
  parsed->version = args[2];
  std::promise<infer_outcome> answer;
  auto got = answer.get_future();
  d.infer(std::move(*parsed), [&answer](infer_outcome o) { answer.set_value(std::move(o)); });
  infer_outcome o = got.get();
  if (o.status != rpc::rpc_status::ok || o.not_found)
    return send_error(res, http_status_of(o), o.message);
  std::optional<std::size_t> out_head;
  std::string body = render_infer_response(o.response, out_head);
  if (out_head) {
    res.set_header(kHeaderLength, std::to_string(*out_head));
    res.set_content(std::move(body), "application/octet-stream");
  } else {
    res.set_content(std::move(body), kJson);
  }
}

bool authorized(const httplib::Request& req, const std::string& token) {
  const std::string h = req.get_header_value("Authorization");
  return !token.empty() && h.starts_with("Bearer ") &&
         rpc::token_matches(std::string_view(h).substr(7), token);
}

void handle_repository(door& d, const std::string& token, const httplib::Request& req,
                       const http::path_args& args, httplib::Response& res) {
  if (!authorized(req, token))
    return send_error(res, 401,
                      token.empty() ? "model repository calls are disabled (no admin token)"
                                    : "wrong or missing admin token (Authorization: Bearer TOKEN)");
  const std::string name = args[1], action = args[2];
  std::string path;  // empty: the model repository's latest version of `name`
  if (!req.body.empty()) {
    auto j = json_depth(req.body, kMaxJsonDepth) > kMaxJsonDepth
                 ? json(json::value_t::discarded)
                 : json::parse(req.body, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return send_error(res, 400, "request body is not a JSON object");
    if (j.contains("parameters") && j["parameters"].is_object() &&
        j["parameters"].contains("path") && j["parameters"]["path"].is_string())
      path = j["parameters"]["path"].get<std::string>();
  }
  const status st =
      action == "load" ? d.service().load_model(name, path) : d.service().unload_model(name);
  if (!st) {
    const int code = st.code() == errc::not_found     ? 404
                     : st.code() == errc::unsupported ? 501
                                                      : 400;
    return send_error(res, code, st.message());
  }
  res.status = 200;
  res.set_content("{}", kJson);
}

// The graph-update extension (graph_json.hpp): admin token required. The batch
// is logged before the answer, on an HTTP worker thread (not the event loop).
void handle_graph(door& d, const std::string& token, const httplib::Request& req,
                  httplib::Response& res, bool update) {
  if (!authorized(req, token))
    return send_error(res, 401,
                      token.empty() ? "graph calls are disabled (no admin token)"
                                    : "wrong or missing admin token (Authorization: Bearer TOKEN)");
  rpc::graph_edit_answer a;
  std::vector<std::pair<std::string, std::int64_t>> added;  // a typed batch's, per node type
  bool typed = false;
  if (update) {
    auto edit = graph_edit_of_json(req.body);
    if (!edit) return send_error(res, 400, edit.error().message());
    for (const auto& n : edit->nodes) added.emplace_back(n.type, n.add);
    typed = !edit->nodes.empty() || !edit->add_typed.empty() || !edit->remove_typed.empty();
    a = d.service().update_graph(std::move(*edit));
  } else {
    a = d.service().graph_version();
  }
  if (a.status != rpc_status::ok)
    return send_error(res, a.status == rpc_status::bad_request ? 400 : 503, a.message);
  res.status = 200;
  res.set_content(graph_answer_json(a, added, typed), kJson);
}

void send_unknown_model(httplib::Response& res, const std::string& name) {
  send_error(res, 404, fmt::format("unknown model '{}'", name.substr(0, 64)));
}

// A GET route on one model (`path` binds its name and version) answering
// `body(model)` as JSON, or 404 for a model the door does not serve.
template <class Body>
void get_model(http::event_server& s, const std::string& path, door& d, Body body) {
  s.get(path,
        [&d, body](const httplib::Request&, const http::path_args& a, httplib::Response& res) {
          auto m = d.find(a[1], a[2]);
          if (!m) return send_unknown_model(res, a[1]);
          res.set_content(body(*m), kJson);
        });
}

void add_routes(http::event_server& s, door& d, const std::string& token) {
  s.get("/v2", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        dump({{"name", "spindle"},
              {"version", "0.1.0"},
              {"extensions",
               {"binary_tensor_data", "model_repository", "model_configuration", "statistics",
                "spindle_graph_updates"}}}),
        kJson);
  });
  auto live = [](const httplib::Request&, httplib::Response& res) { res.status = 200; };
  s.get("/v2/health/live", live);
  s.get("/healthz", live);
  s.get("/v2/health/ready", [&d](const httplib::Request&, httplib::Response& res) {
    res.status = d.ready() ? 200 : 503;
  });
  s.get(std::string(kModelPath) + "/ready",
        [&d](const httplib::Request&, const http::path_args& a, httplib::Response& res) {
          if (!d.known(a[1], a[2])) return send_unknown_model(res, a[1]);
          res.status = d.ready() && d.model_ready(a[1], a[2]) ? 200 : 400;
        });
  // Triton's statistics and model-configuration extensions (tritonclient,
  // perf_analyzer); /v2/models/stats before the model routes, which would take it
  // for a model named "stats".
  s.get("/v2/models/stats", [&d](const httplib::Request&, httplib::Response& res) {
    res.set_content(statistics_json(statistics_of(d.service(), "")), kJson);
  });
  get_model(s, std::string(kModelPath) + "/stats", d, [&d](const rpc::model_info& m) {
    return statistics_json(statistics_of(d.service(), m.name));
  });
  get_model(s, std::string(kModelPath) + "/config", d,
            [](const rpc::model_info& m) { return config_json(metadata_of(m)); });
  get_model(s, kModelPath, d,
            [](const rpc::model_info& m) { return dump(metadata_json(metadata_of(m))); });
  s.post(std::string(kModelPath) + "/infer",
         [&d](const httplib::Request& req, const http::path_args& a, httplib::Response& res) {
           handle_infer(d, req, a, res);
         });
  s.post("/v2/repository/index", [&d](const httplib::Request&, httplib::Response& res) {
    json out = json::array();
    for (const auto& m : d.service().models())
      out.push_back({{"name", m.name},
                     {"version", m.version},
                     {"state", d.service().model_ready(m.name) ? "READY" : "UNAVAILABLE"}});
    res.set_content(dump(out), kJson);
  });
  s.post("/v2/graph/update", [&d, token](const httplib::Request& req, httplib::Response& res) {
    handle_graph(d, token, req, res, true);
  });
  s.get("/v2/graph", [&d, token](const httplib::Request& req, httplib::Response& res) {
    handle_graph(d, token, req, res, false);
  });
  s.post("/v2/repository/models/{}/{load|unload}",
         [&d, token](const httplib::Request& req, const http::path_args& a,
                     httplib::Response& res) { handle_repository(d, token, req, a, res); });
}

}  // namespace

struct http_server::impl {
  std::unique_ptr<http::event_server> server;
};

expected<std::unique_ptr<http_server>> http_server::start(const http_options& o, door& d) {
  SPINDLE_ASSIGN_OR_RETURN(auto where, parse_host_port(o.listen, "--http"));
  http::event_server_options eo;
  eo.host = where.host;
  eo.port = int(where.port);
  eo.name = "kserve-http";
  eo.workers = std::max<std::size_t>(1, o.workers);
  eo.max_body_bytes = o.max_body_bytes;
  eo.max_connections = o.max_connections;
  eo.header_timeout = eo.body_timeout = o.request_timeout;
  auto bound = http::event_server::bind(eo);
  if (!bound) return std::move(bound).error().with_context("--http " + o.listen + ": ");
  auto i = std::make_unique<impl>();
  i->server = std::move(*bound);
  add_routes(*i->server, d, o.admin_token);
  i->server->on_error([](int, const std::string& why, httplib::Response& res) {
    res.set_content(error_body(why), kJson);
  });
  i->server->start();
  const int port = i->server->port();
  return std::unique_ptr<http_server>(new http_server(std::move(i), port));
}

http_server::http_server(std::unique_ptr<impl> i, int port) : impl_(std::move(i)), port_(port) {}

http_server::~http_server() = default;  // the event server stops and joins

}  // namespace spindle::transport::kserve
