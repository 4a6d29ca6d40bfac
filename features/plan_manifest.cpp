#include "features/plan_manifest.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/checksum.hpp"
#include "core/npy.hpp"
#include "features/dataset_partition.hpp"

namespace spindle::features {
namespace {

// The stored layout's version: a later layout is refused by name, not misread.
constexpr int kFormat = 1;

nlohmann::json shards_json(const std::vector<shard_info>& shards) {
  auto out = nlohmann::json::array();
  for (const auto& s : shards)
    out.push_back({{"server", s.server},
                   {"device", s.device},
                   {"tier", std::string(to_string(s.tier))},
                   {"capacity_rows", s.capacity_rows}});
  return out;
}

// The shards a plan for `topo` has; a stored plan must name exactly these.
status check_shards(const std::string& file, const nlohmann::json& stored,
                    const std::vector<shard_info>& want) {
  const auto have = shards_json(want);
  if (stored == have) return status::ok();
  return make_error(errc::invalid_argument,
                    "{}: the plan's shards ({}) are not this cluster's ({}): the cluster TOML's "
                    "servers or tiers changed since `spindle partition`; partition again",
                    file, stored.dump(), have.dump());
}

expected<std::vector<std::vector<shard_index>>> read_classes(const std::string& path) {
  SPINDLE_ASSIGN_OR_RETURN(auto a, npy_array::open(path));
  SPINDLE_ASSIGN_OR_RETURN(auto v, a.as<std::uint32_t>());
  if (a.shape().size() != 2 || a.shape()[1] != 2)
    return make_error(errc::corrupt_data, "{}: expected [pairs x 2] (class, shard)", path);
  std::vector<std::vector<shard_index>> classes;
  for (std::size_t i = 0; i + 1 < v.size(); i += 2) {
    if (v[i] > classes.size() || v[i] >= 0xffff)
      return make_error(errc::corrupt_data, "{}: pair {} names class {} out of order", path, i / 2,
                        v[i]);
    if (v[i] == classes.size()) classes.emplace_back();
    if (v[i + 1] >= 0xffff)
      return make_error(errc::corrupt_data, "{}: pair {} names shard {}", path, i / 2, v[i + 1]);
    classes[v[i]].push_back(shard_index(v[i + 1]));
  }
  return classes;
}

expected<feature_lookup> read_lookup(const std::string& dir, std::size_t num_shards) {
  const std::string nodes_path = dir + "/plan_nodes.npy";
  SPINDLE_ASSIGN_OR_RETURN(auto classes, read_classes(dir + "/plan_classes.npy"));
  SPINDLE_ASSIGN_OR_RETURN(auto a, npy_array::open(nodes_path));
  SPINDLE_ASSIGN_OR_RETURN(auto v, a.as<std::uint32_t>());
  if (a.shape().size() != 2 || a.shape()[1] != 2)
    return make_error(errc::corrupt_data, "{}: expected [nodes x 2] (class, index)", nodes_path);
  const std::size_t n = v.size() / 2;
  std::vector<std::uint16_t> class_of(n);
  std::vector<std::uint32_t> index(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (v[2 * i] >= classes.size())
      return make_error(errc::corrupt_data, "{}: node {} is in class {} of {}", nodes_path, i,
                        v[2 * i], classes.size());
    class_of[i] = std::uint16_t(v[2 * i]);
    index[i] = v[2 * i + 1];
  }
  auto lookup = restore_lookup(std::move(class_of), std::move(index), classes, num_shards);
  if (!lookup) return std::move(lookup).error().with_context(dir);
  return lookup;
}

}  // namespace

status write_plan_manifest(const placement_plan& plan, const std::string& dir) {
  const auto& t = plan.lookup;
  std::vector<std::uint32_t> nodes(2 * t.num_nodes());
  for (std::uint64_t v = 0; v < t.num_nodes(); ++v) {
    nodes[2 * v] = std::uint32_t(t.class_of(v));
    nodes[2 * v + 1] = t.index_of(v);
  }
  std::vector<std::uint32_t> classes;
  for (std::size_t c = 0; c < t.num_classes(); ++c)
    for (const auto& o : t.class_owners(c)) classes.insert(classes.end(), {std::uint32_t(c), o.shard});
  SPINDLE_TRY(write_npy(dir + "/plan_nodes.npy", dtype::u32, {std::int64_t(t.num_nodes()), 2},
                        nodes.data()).error_or_ok());
  SPINDLE_TRY(write_npy(dir + "/plan_classes.npy", dtype::u32,
                        {std::int64_t(classes.size() / 2), 2}, classes.data())
                  .error_or_ok());
  const nlohmann::json j = {{"format", kFormat},
                            {"policy", plan.policy},
                            {"row_bytes", plan.row_bytes},
                            {"replicated_rows", plan.replicated_rows},
                            {"nodes", t.num_nodes()},
                            {"checksum", checksum_hex(plan_checksum(plan))},
                            {"shards", shards_json(plan.shards)}};
  const std::string path = dir + "/plan.json", tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << j.dump(2) << '\n';
    if (!f.flush()) return make_error(errc::io_error, "{}: cannot write", tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return make_error(errc::io_error, "{}: {}", path, ec.message());
  return status::ok();
}

bool has_plan_manifest(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::exists(dir + "/plan.json", ec);
}

expected<placement_plan> read_plan_manifest(const std::string& dir, const config::topology& topo,
                                            std::uint64_t row_bytes) {
  const std::string path = dir + "/plan.json";
  std::ifstream f(path);
  if (!f) return make_error(errc::not_found, "{}: cannot open", path);
  const auto j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("shards") || !j.contains("checksum"))
    return make_error(errc::corrupt_data, "{}: not a stored placement plan", path);
  if (j.value("format", 0) != kFormat)
    return make_error(errc::unsupported, "{}: plan format {} (this build reads {})", path,
                      j.value("format", 0), kFormat);
  placement_plan plan;
  plan.shards = enumerate_shards(topo, row_bytes);
  SPINDLE_TRY(check_shards(path, j["shards"], plan.shards));
  plan.policy = j.value("policy", std::string());
  plan.row_bytes = row_bytes;
  plan.replicated_rows = j.value("replicated_rows", std::uint64_t(0));
  SPINDLE_ASSIGN_OR_RETURN(plan.lookup, read_lookup(dir, plan.shards.size()));
  const std::string want = j.value("checksum", std::string());
  if (checksum_hex(plan_checksum(plan)) != want)
    return make_error(errc::corrupt_data, "{}: the stored plan's checksum is {}, its content's {}",
                      path, want, checksum_hex(plan_checksum(plan)));
  return plan;
}

}  // namespace spindle::features
