#include "runtime/model_repository.hpp"

#include <fmt/ranges.h>

#include <charconv>
#include <filesystem>

#include "config/model.hpp"

namespace spindle::runtime {
namespace {

namespace fs = std::filesystem;

// "3" -> 3; anything that is not a positive integer -> 0.
int version_of(const std::string& text) {
  int v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && p == text.data() + text.size() && v > 0 ? v : 0;
}

}  // namespace

expected<std::map<std::string, repository_model>> scan_repository(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return make_error(errc::not_found, "--model-repository {}: not a directory", dir);
  std::map<std::string, repository_model> out;
  for (const auto& m : fs::directory_iterator(dir, ec)) {
    if (!m.is_directory()) continue;
    repository_model rm;
    rm.name = m.path().filename().string();
    for (const auto& v : fs::directory_iterator(m.path(), ec)) {
      const int version = version_of(v.path().filename().string());
      if (version > 0 && fs::is_regular_file(v.path() / "model.toml", ec))
        rm.versions[version] = v.path().string();
    }
    if (!rm.versions.empty()) out[rm.name] = std::move(rm);
  }
  if (ec) return make_error(errc::io_error, "--model-repository {}: {}", dir, ec.message());
  return out;
}

expected<std::vector<picked_version>> pick_repository_versions(const std::string& dir,
                                                               const std::string& name) {
  SPINDLE_ASSIGN_OR_RETURN(auto all, scan_repository(dir));
  auto it = all.find(name);
  if (it == all.end()) {
    std::vector<std::string> names;
    for (const auto& [n, _] : all) names.push_back(n);
    return make_error(errc::not_found,
                      "model repository {}: no model '{}' (a folder {}/{}/VERSION/ with a "
                      "model.toml; it has: {})",
                      dir, name, dir, name,
                      names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")));
  }
  std::vector<int> versions;
  for (const auto& [v, _] : it->second.versions) versions.push_back(v);
  const std::string& latest = it->second.versions.rbegin()->second;
  SPINDLE_ASSIGN_OR_RETURN(auto desc, config::load_model_desc(latest));
  auto picked = config::pick_versions(desc.version_policy, versions);
  if (!picked)
    return std::move(picked).error().with_context(fmt::format("{}/model.toml: ", latest));
  std::vector<picked_version> out;
  for (int v : *picked) out.push_back({v, it->second.versions.at(v)});
  return out;
}

expected<std::vector<std::string>> repository_versions_to_serve(const std::string& dir,
                                                                const std::string& name) {
  SPINDLE_ASSIGN_OR_RETURN(auto picked, pick_repository_versions(dir, name));
  std::vector<std::string> out;
  for (const auto& p : picked) out.push_back(std::to_string(p.version));
  return out;
}

expected<std::string> repository_version_dir(const std::string& dir, const std::string& name,
                                             const std::string& version) {
  SPINDLE_ASSIGN_OR_RETURN(auto all, scan_repository(dir));
  auto it = all.find(name);
  const int v = version_of(version);
  if (it == all.end() || !it->second.versions.count(v))
    return make_error(errc::not_found, "model repository {}: no {}/{}/model.toml", dir, name,
                      version);
  return it->second.versions.at(v);
}

}  // namespace spindle::runtime
