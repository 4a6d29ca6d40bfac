// The Cap'n Proto client's admin calls: stats, the model list, tunables, cluster
// members, loading or unloading a model, and graph updates (each with the admin token).
#include "transport/rpc/rpc_client_impl.hpp"

namespace spindle::transport::rpc {

expected<admin_reply> rpc_client::stats(const std::string& token) {
  return guarded(endpoint_, [&]() -> expected<admin_reply> {
    auto req = impl_->admin.statsRequest();
    req.setToken(text(token));
    auto r = impl_->wait(req.send());
    admin_reply a = admin_of(r);
    a.json = str(r.getJson());
    return a;
  });
}

expected<admin_reply> rpc_client::list_models(const std::string& token) {
  return guarded(endpoint_, [&]() -> expected<admin_reply> {
    auto req = impl_->admin.listModelsRequest();
    req.setToken(text(token));
    auto r = impl_->wait(req.send());
    admin_reply a = admin_of(r);
    for (auto m : r.getModels()) {
      a.models.push_back({str(m.getName()), str(m.getKind()), str(m.getArch()), m.getInputWidth(),
                          m.getOutputWidth()});
      for (auto rows : m.getTableRows()) a.models.back().table_rows.push_back(rows);
      a.models.back().tables = std::uint32_t(a.models.back().table_rows.size());
    }
    return a;
  });
}

expected<admin_reply> rpc_client::get_tunables(const std::string& token, const std::string& model) {
  return guarded(endpoint_, [&]() -> expected<admin_reply> {
    auto req = impl_->admin.getTunablesRequest();
    req.setToken(text(token));
    req.setModel(text(model));
    auto r = impl_->wait(req.send());
    admin_reply a = admin_of(r);
    for (auto t : r.getTunables()) a.tunables.push_back({str(t.getName()), str(t.getValue())});
    return a;
  });
}

expected<admin_reply> rpc_client::set_tunable(const std::string& token, const std::string& model,
                                              const std::string& name, const std::string& value) {
  return guarded(endpoint_, [&]() -> expected<admin_reply> {
    auto req = impl_->admin.setTunableRequest();
    req.setToken(text(token));
    req.setModel(text(model));
    req.setName(text(name));
    req.setValue(text(value));
    auto r = impl_->wait(req.send());
    return admin_of(r);
  });
}

expected<admin_reply> rpc_client::members(const std::string& token) {
  return guarded(endpoint_, [&]() -> expected<admin_reply> {
    auto req = impl_->admin.membersRequest();
    req.setToken(text(token));
    auto r = impl_->wait(req.send());
    admin_reply a = admin_of(r);
    a.json = str(r.getJson());
    return a;
  });
}

expected<admin_reply> rpc_client::load_model(const std::string& token, const std::string& name,
                                             const std::string& path) {
  return guarded(endpoint_, [&]() -> expected<admin_reply> {
    auto req = impl_->admin.loadModelRequest();
    req.setToken(text(token));
    req.setName(text(name));
    req.setPath(text(path));
    auto r = impl_->wait(req.send());
    return admin_of(r);
  });
}

expected<admin_reply> rpc_client::unload_model(const std::string& token, const std::string& name) {
  return guarded(endpoint_, [&]() -> expected<admin_reply> {
    auto req = impl_->admin.unloadModelRequest();
    req.setToken(text(token));
    req.setName(text(name));
    auto r = impl_->wait(req.send());
    return admin_of(r);
  });
}

expected<graph_edit_answer> rpc_client::update_graph(const std::string& token,
                                                    const graph_edit& edit) {
  return guarded(endpoint_, [&]() -> expected<graph_edit_answer> {
    auto req = impl_->admin.updateGraphRequest();
    req.setToken(text(token));
    detail::write(req.initUpdate(), edit);
    auto r = impl_->wait(req.send());
    graph_edit_answer a{detail::from_wire(r.getStatus()), str(r.getMessage()), r.getVersion(),
                        r.getNodes(), {}};
    for (auto id : r.getNewIds()) a.new_ids.push_back(id);
    return a;
  });
}

expected<graph_edit_answer> rpc_client::graph_version(const std::string& token) {
  return guarded(endpoint_, [&]() -> expected<graph_edit_answer> {
    auto req = impl_->admin.graphVersionRequest();
    req.setToken(text(token));
    auto r = impl_->wait(req.send());
    return graph_edit_answer{detail::from_wire(r.getStatus()), str(r.getMessage()), r.getVersion(),
                             r.getNodes(), {}};
  });
}

}  // namespace spindle::transport::rpc
