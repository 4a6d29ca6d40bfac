// The Cap'n Proto client's admin calls: stats, the model list, tunables, cluster
// members, loading or unloading a model, and graph updates (each with the admin token).
#include "transport/rpc/rpc_client_impl.hpp"

namespace spindle::transport::rpc {
namespace {

// Sends the admin request `make(admin)` builds, with the admin token, and
// returns `read(reply)`; a broken connection becomes an error naming `endpoint`.
template <class Answer, class Impl, class Make, class Read>
expected<Answer> admin_call(Impl& c, const std::string& endpoint, const std::string& token,
                            Make make, Read read) {
  return guarded(endpoint, [&]() -> expected<Answer> {
    auto req = make(c.admin);
    req.setToken(text(token));
    auto r = c.wait(req.send());
    return read(r);
  });
}

// How a reply is read: its status and message only; with its JSON document; a graph call's.
const auto plain_reply = [](auto& r) { return admin_of(r); };
const auto json_reply = [](auto& r) {
  admin_reply a = admin_of(r);
  a.json = str(r.getJson());
  return a;
};
const auto graph_reply = [](auto& r) {
  return graph_edit_answer{
      detail::from_wire(r.getStatus()), str(r.getMessage()), r.getVersion(), r.getNodes(), {}};
};

}  // namespace

expected<admin_reply> rpc_client::stats(const std::string& token) {
  return admin_call<admin_reply>(
      *impl_, endpoint_, token, [](auto& admin) { return admin.statsRequest(); }, json_reply);
}

expected<admin_reply> rpc_client::list_models(const std::string& token) {
  return admin_call<admin_reply>(
      *impl_, endpoint_, token, [](auto& admin) { return admin.listModelsRequest(); },
      [](auto& r) {
        admin_reply a = admin_of(r);
        for (auto m : r.getModels()) {
          a.models.push_back({str(m.getName()), str(m.getKind()), str(m.getArch()),
                              m.getInputWidth(), m.getOutputWidth()});
          for (auto rows : m.getTableRows()) a.models.back().table_rows.push_back(rows);
          if (m.hasTask()) a.models.back().task = str(m.getTask());
          for (auto t : m.getNodeTypes()) a.models.back().node_types.push_back(str(t));
      for (auto t : m.getNodeTypes()) a.models.back().node_types.push_back(str(t));
          a.models.back().tables = std::uint32_t(a.models.back().table_rows.size());
        }
        return a;
      });
}

expected<admin_reply> rpc_client::get_tunables(const std::string& token, const std::string& model) {
  return admin_call<admin_reply>(
      *impl_, endpoint_, token,
      [&](auto& admin) {
        auto req = admin.getTunablesRequest();
        req.setModel(text(model));
        return req;
      },
      [](auto& r) {
        admin_reply a = admin_of(r);
        for (auto t : r.getTunables()) a.tunables.push_back({str(t.getName()), str(t.getValue())});
        return a;
      });
}

expected<admin_reply> rpc_client::set_tunable(const std::string& token, const std::string& model,
                                              const std::string& name, const std::string& value) {
  return admin_call<admin_reply>(
      *impl_, endpoint_, token,
      [&](auto& admin) {
        auto req = admin.setTunableRequest();
        req.setModel(text(model));
        req.setName(text(name));
        req.setValue(text(value));
        return req;
      },
      plain_reply);
}

expected<admin_reply> rpc_client::members(const std::string& token) {
  return admin_call<admin_reply>(
      *impl_, endpoint_, token, [](auto& admin) { return admin.membersRequest(); }, json_reply);
}

expected<admin_reply> rpc_client::load_model(const std::string& token, const std::string& name,
                                             const std::string& path) {
  return admin_call<admin_reply>(
      *impl_, endpoint_, token,
      [&](auto& admin) {
        auto req = admin.loadModelRequest();
        req.setName(text(name));
        req.setPath(text(path));
        return req;
      },
      plain_reply);
}

expected<admin_reply> rpc_client::unload_model(const std::string& token, const std::string& name) {
  return admin_call<admin_reply>(
      *impl_, endpoint_, token,
      [&](auto& admin) {
        auto req = admin.unloadModelRequest();
        req.setName(text(name));
        return req;
      },
      plain_reply);
}

expected<graph_edit_answer> rpc_client::update_graph(const std::string& token,
                                                    const graph_edit& edit) {
  return admin_call<graph_edit_answer>(
      *impl_, endpoint_, token,
      [&](auto& admin) {
        auto req = admin.updateGraphRequest();
        detail::write(req.initUpdate(), edit);
        return req;
      },
      [](auto& r) {
        graph_edit_answer a = graph_reply(r);
        for (auto id : r.getNewIds()) a.new_ids.push_back(id);
        return a;
      });
}

expected<graph_edit_answer> rpc_client::graph_version(const std::string& token) {
  return admin_call<graph_edit_answer>(
      *impl_, endpoint_, token, [](auto& admin) { return admin.graphVersionRequest(); },
      graph_reply);
}

}  // namespace spindle::transport::rpc
