#include "transport/rpc/rpc_client.hpp"

#include <unistd.h>

#include <capnp/ez-rpc.h>
#include <kj/async-io.h>
#include <kj/async.h>
#include <kj/timer.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <random>

#include "transport/rpc/codec.hpp"
#include "transport/rpc/rpc_client_impl.hpp"
#include "transport/ucx/net_devices.hpp"
#include "transport/ucx/ucx.hpp"

namespace spindle::transport::rpc {

std::vector<std::string> rpc_client::split_endpoints(const std::string& endpoints) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= endpoints.size()) {
    const auto comma = std::min(endpoints.find(',', at), endpoints.size());
    if (comma > at) out.push_back(endpoints.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

expected<std::unique_ptr<rpc_client>> rpc_client::connect_any(const std::string& endpoints,
                                                              int timeout_ms,
                                                              std::vector<std::string>* skipped) {
  const auto doors = split_endpoints(endpoints);
  if (doors.empty())
    return make_error(errc::invalid_argument, "--connect '{}': no HOST:PORT given", endpoints);
  std::string tried;
  for (const auto& e : doors) {
    auto client = connect(e, timeout_ms);
    if (client) return client;
    if (skipped) skipped->push_back(client.error().message());
    tried += (tried.empty() ? "" : "; ") + client.error().message();
  }
  return make_error(errc::unavailable, "--connect {}: no door answered ({})", endpoints, tried);
}

expected<std::unique_ptr<rpc_client>> rpc_client::connect(const std::string& endpoint,
                                                          int timeout_ms) {
  const auto colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return make_error(errc::invalid_argument, "--connect '{}': expected HOST:PORT", endpoint);
  }
  unsigned port = 0;
  try {
    port = unsigned(std::stoul(endpoint.substr(colon + 1)));
  } catch (const std::exception&) {
    return make_error(errc::invalid_argument, "--connect '{}': bad port", endpoint);
  }
  std::unique_ptr<rpc_client> c;
  SPINDLE_TRY(guarded(endpoint, [&]() -> status {
    auto i = std::make_unique<impl>(endpoint.substr(0, colon), port, timeout_ms);
    // The bootstrap goes out now, not at the first call: a server closes a
    // connection that sends nothing within its handshake deadline.
    i->wait(i->root.whenResolved());
    c.reset(new rpc_client(std::move(i), endpoint));
    return status::ok();
  }));
  SPINDLE_ASSIGN_OR_RETURN(std::uint32_t v, c->server_version());
  if (v < 1)
    return make_error(errc::unsupported, "rpc {}: server speaks schema version {}", endpoint, v);
  return c;
}

rpc_client::rpc_client(std::unique_ptr<impl> i, std::string endpoint)
    : impl_(std::move(i)), endpoint_(std::move(endpoint)) {}
rpc_client::~rpc_client() = default;

expected<std::uint32_t> rpc_client::server_version() {
  return guarded(endpoint_, [&]() -> expected<std::uint32_t> {
    return impl_->wait(impl_->inference.versionRequest().send()).getVersion();
  });
}

expected<std::vector<model_info>> rpc_client::models() {
  return guarded(endpoint_, [&]() -> expected<std::vector<model_info>> {
    auto r = impl_->wait(impl_->inference.modelsRequest().send());
    std::vector<model_info> out;
    for (auto m : r.getModels()) {
      out.push_back({str(m.getName()), str(m.getKind()), str(m.getArch()), m.getInputWidth(),
                     m.getOutputWidth()});
      for (auto rows : m.getTableRows()) out.back().table_rows.push_back(rows);
      if (m.hasTask()) out.back().task = str(m.getTask());
      for (auto t : m.getNodeTypes()) out.back().node_types.push_back(str(t));
      out.back().tables = std::uint32_t(out.back().table_rows.size());
    }
    return out;
  });
}

expected<bool> rpc_client::server_ready() {
  return guarded(endpoint_, [&]() -> expected<bool> {
    return impl_->wait(impl_->inference.versionRequest().send()).getReady();
  });
}

expected<gnn_answer> rpc_client::infer_gnn(const gnn_call& call) {
  return guarded(endpoint_, [&]() -> expected<gnn_answer> {
    auto req = impl_->inference.inferGnnRequest(detail::size_of(call));
    detail::write(req.initRequest(), call);
    return detail::read(impl_->wait(req.send()).getReply());
  });
}

expected<std::vector<gnn_answer>> rpc_client::infer_gnn_batch(const std::vector<gnn_call>& calls) {
  return guarded(endpoint_, [&]() -> expected<std::vector<gnn_answer>> {
    auto req = impl_->inference.inferGnnBatchRequest();
    auto list = req.initRequests(calls.size());
    for (unsigned i = 0; i < calls.size(); ++i) detail::write(list[i], calls[i]);
    auto resp = impl_->wait(req.send());
    std::vector<gnn_answer> out;
    for (auto r : resp.getReplies()) out.push_back(detail::read(r));
    // A call over the server's limits is refused whole, with one reply.
    if (out.size() != calls.size() && out.size() == 1 && out[0].status != rpc_status::ok)
      return make_error(errc::invalid_argument, "{}", out[0].message);
    if (out.size() != calls.size())
      return make_error(errc::corrupt_data, "inferGnnBatch: {} replies for {} requests", out.size(),
                        calls.size());
    return out;
  });
}

expected<rec_answer> rpc_client::infer_rec(const rec_call& call) {
  return guarded(endpoint_, [&]() -> expected<rec_answer> {
    auto req = impl_->inference.inferRecRequest(detail::size_of(call));
    detail::write(req.initRequest(), call);
    return detail::read(impl_->wait(req.send()).getReply());
  });
}

expected<tensor_answer> rpc_client::infer_tensor(const std::string& model,
                                                 std::span<const float> payload,
                                                 std::uint32_t deadline_us) {
  return guarded(endpoint_, [&]() -> expected<tensor_answer> {
    auto req = impl_->inference.inferTensorRequest();
    req.setModel(text(model));
    req.setPayload(
        kj::arrayPtr(reinterpret_cast<const kj::byte*>(payload.data()), payload.size_bytes()));
    req.setDeadlineUs(deadline_us);
    return detail::read(impl_->wait(req.send()).getReply());
  });
}

status rpc_client::open_split() {
  if (impl_->ucx_ep) return status::ok();
  std::vector<std::uint8_t> address;
  SPINDLE_TRY(guarded(endpoint_, [&]() -> status {
    auto r = impl_->wait(impl_->inference.openSplitRequest().send());
    auto s = r.getSession();
    address.assign(s.getWorkerAddress().begin(), s.getWorkerAddress().end());
    impl_->split_models.clear();
    for (auto m : s.getModels()) impl_->split_models.push_back(str(m));
    return status::ok();
  }));
  // A client of a server on this machine needs no UCX listener elsewhere.
  if (const auto host = endpoint_.substr(0, endpoint_.rfind(':')); ucx::interface_of(host))
    SPINDLE_TRY(ucx::restrict_to_host(host));
  SPINDLE_ASSIGN_OR_RETURN(auto ctx, ucx::context::create());
  impl_->ucx_ctx.emplace(std::move(ctx));
  SPINDLE_ASSIGN_OR_RETURN(auto w, ucx::worker::create(*impl_->ucx_ctx));
  impl_->ucx_worker.emplace(std::move(w));
  SPINDLE_ASSIGN_OR_RETURN(auto ep, ucx::endpoint::connect(*impl_->ucx_worker, address));
  impl_->ucx_ep.emplace(std::move(ep));
  // Call ids: a random session prefix, then a counter (unique per session).
  impl_->next_call = std::uint64_t(std::random_device{}()) << 32;
  return status::ok();
}

expected<tensor_answer> rpc_client::infer_split(const std::string& model,
                                                std::span<const float> payload,
                                                std::uint32_t deadline_us) {
  if (!impl_->ucx_ep)
    return make_error(errc::invalid_argument, "infer_split: call open_split() first");
  const auto it = std::find(impl_->split_models.begin(), impl_->split_models.end(), model);
  if (it == impl_->split_models.end()) {
    return make_error(errc::invalid_argument, "infer_split: no tensor model '{}' on {}", model,
                      endpoint_);
  }
  split_header h{++impl_->next_call, std::uint32_t(it - impl_->split_models.begin())};
  std::byte header[12];
  std::memcpy(header, &h.call_id, 8);
  std::memcpy(header + 8, &h.model, 4);
  SPINDLE_TRY(
      impl_->ucx_ep->send_bulk(split_am_id, header, std::as_bytes(payload), impl_->timeout_ms));
  return guarded(endpoint_, [&]() -> expected<tensor_answer> {
    auto req = impl_->inference.inferSplitRequest();
    req.setModel(text(model));
    req.setCallId(h.call_id);
    req.setBytes(payload.size_bytes());
    req.setDeadlineUs(deadline_us);
    return detail::read(impl_->wait(req.send()).getReply());
  });
}

}  // namespace spindle::transport::rpc
