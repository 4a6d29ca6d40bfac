#include "features/plan_manifest.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/checksum.hpp"
#include "core/json_depth.hpp"
#include "core/npy.hpp"
#include "core/text_file.hpp"
#include "features/dataset_partition.hpp"

namespace spindle::features {
namespace {

// The stored layout's version: a later layout is refused by name, not misread.
constexpr int kFormat = 1;
// plan.json names one entry per shard: far below this for any cluster.
constexpr std::size_t kMaxPlanJsonBytes = 1u << 20;
constexpr std::size_t kMaxPlanJsonDepth = 4;

// At most `n` characters of `text`, for error messages.
std::string clip(std::string text, std::size_t n = 240) {
  if (text.size() > n) text = text.substr(0, n) + "...";
  return text;
}

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
                    file, clip(stored.dump()), clip(have.dump()));
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
  if (!lookup) return std::move(lookup).error().with_context(nodes_path + ": ");
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
  std::error_code ec;  // any of the three: a partly deleted plan is refused, not recomputed
  for (const char* f : {"/plan.json", "/plan_nodes.npy", "/plan_classes.npy"})
    if (std::filesystem::exists(dir + f, ec)) return true;
  return false;
}

namespace {

// plan.json as JSON, bounded in size and depth before parsing; errors name it.
expected<nlohmann::json> read_plan_json(const std::string& path) {
  SPINDLE_ASSIGN_OR_RETURN(auto text, read_text_file(path, "placement plan", kMaxPlanJsonBytes));
  if (json_depth(text, kMaxPlanJsonDepth + 1) > kMaxPlanJsonDepth)
    return make_error(errc::corrupt_data, "{}: nested deeper than a stored plan", path);
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("shards") || !j["shards"].is_array() ||
      !j.contains("checksum") || !j["checksum"].is_string())
    return make_error(errc::corrupt_data, "{}: not a stored placement plan", path);
  return j;
}

// An unsigned integer field of plan.json, refused by name when missing or mistyped.
expected<std::uint64_t> count_field(const nlohmann::json& j, const std::string& path,
                                    const char* name) {
  if (!j.contains(name) || !j[name].is_number_unsigned())
    return make_error(errc::corrupt_data, "{}: \"{}\" is not a count", path, name);
  return j[name].get<std::uint64_t>();
}

}  // namespace

expected<placement_plan> read_plan_manifest(const std::string& dir, const config::topology& topo,
                                            std::uint64_t row_bytes, std::uint64_t num_nodes,
                                            const std::string& policy) {
  const std::string path = dir + "/plan.json";
  SPINDLE_ASSIGN_OR_RETURN(auto j, read_plan_json(path));
  const auto& format = j["format"];
  if (!format.is_number_integer() || format.get<std::int64_t>() != kFormat)
    return make_error(errc::unsupported, "{}: plan format {} (this build reads {})", path,
                      clip(format.dump(), 40), kFormat);
  SPINDLE_ASSIGN_OR_RETURN(auto nodes, count_field(j, path, "nodes"));
  SPINDLE_ASSIGN_OR_RETURN(auto stored_row_bytes, count_field(j, path, "row_bytes"));
  if (nodes != num_nodes || stored_row_bytes != row_bytes)
    return make_error(errc::invalid_argument,
                      "{}: a plan for {} nodes of {} bytes, the dataset has {} of {}", path, nodes,
                      stored_row_bytes, num_nodes, row_bytes);
  placement_plan plan;
  plan.shards = enumerate_shards(topo, row_bytes);
  SPINDLE_TRY(check_shards(path, j["shards"], plan.shards));
  plan.policy = policy;
  plan.row_bytes = row_bytes;
  SPINDLE_ASSIGN_OR_RETURN(plan.lookup, read_lookup(dir, plan.shards.size()));
  if (plan.lookup.num_nodes() != num_nodes)
    return make_error(errc::corrupt_data, "{}/plan_nodes.npy: {} nodes, the dataset has {}", dir,
                      plan.lookup.num_nodes(), num_nodes);
  for (std::uint64_t v = 0; v < num_nodes; ++v)
    plan.replicated_rows += plan.lookup.locate(v).owners.size() > 1;
  const std::string want = j["checksum"].get<std::string>();
  const std::string have = checksum_hex(plan_checksum(plan));
  if (have != want)
    return make_error(errc::corrupt_data,
                      "{}: the plan files' content (checksum {}) is not the plan stored with "
                      "them ({}): plan_nodes.npy or plan_classes.npy was changed or replaced",
                      path, have, clip(want, 40));
  return plan;
}

}  // namespace spindle::features
