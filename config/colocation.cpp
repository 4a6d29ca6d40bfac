#include "config/colocation.hpp"

#include <toml++/toml.h>

#include <filesystem>

namespace spindle::config {
namespace {

std::string relative_to(const std::string& path, const std::string& file) {
  if (path.empty() || path.front() == '/') return path;
  return (std::filesystem::path(file).parent_path() / path).lexically_normal().string();
}

}  // namespace

expected<std::optional<colocation_section>> parse_colocation(std::string_view toml_text,
                                                             const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(toml_text, path);
  } catch (const toml::parse_error& e) {
    return make_error(errc::invalid_argument, "{}: {}", path, e.description());
  }
  const toml::table* t = root["colocation"].as_table();
  if (!t) return std::optional<colocation_section>();
  colocation_section c;
  c.profiles =
      relative_to(t->get("profiles") ? t->get("profiles")->value_or(std::string()) : "", path);
  if (c.profiles.empty())
    return make_error(errc::invalid_argument,
                      "{}: colocation.profiles: the profile table is needed", path);
  const toml::array* models = t->get("model") ? t->get("model")->as_array() : nullptr;
  if (!models || models->empty())
    return make_error(errc::invalid_argument, "{}: colocation.model: at least one model", path);
  for (std::size_t i = 0; i < models->size(); ++i) {
    const toml::table* m = (*models)[i].as_table();
    const auto where = fmt::format("{}: colocation.model[{}]", path, i);
    if (!m) return make_error(errc::invalid_argument, "{}: expected a table", where);
    colocation_section::model x;
    x.name = m->get("name") ? m->get("name")->value_or(std::string()) : "";
    x.dir = relative_to(m->get("dir") ? m->get("dir")->value_or(std::string()) : "", path);
    x.qps = m->get("qps") ? m->get("qps")->value_or(0.0) : 0.0;
    if (x.name.empty() || x.dir.empty())
      return make_error(errc::invalid_argument, "{}: name and dir are needed", where);
    if (!(x.qps > 0))
      return make_error(errc::invalid_argument, "{}.qps = {}: must be > 0", where, x.qps);
    for (const auto& y : c.models)
      if (y.name == x.name)
        return make_error(errc::invalid_argument, "{}: model '{}' is listed twice", where, x.name);
    c.models.push_back(std::move(x));
  }
  return std::optional<colocation_section>(std::move(c));
}

}  // namespace spindle::config
