#include "runtime/graph_stream.hpp"

#include <unistd.h>

#include <array>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/checksum.hpp"
#include "core/log.hpp"
#include "core/raw_bytes.hpp"

namespace spindle::runtime {
namespace {

constexpr std::array<std::string_view, 10> kFields{"add_src",   "add_dst", "add_weight",
                                                   "remove_src", "remove_dst", "add_nodes",
                                                   "add_count", "set_ids", "set_rows",
                                                   "remove_nodes"};

template <class T>
status take(const hps::stream_entry& e, std::string_view name, std::vector<T>& out) {
  const std::string_view v = e.field(name);
  if (v.size() % sizeof(T) != 0)
    return make_error(errc::invalid_argument,
                      "field '{}' has {} bytes, not a whole number of {}-byte values", name,
                      v.size(), sizeof(T));
  out.resize(v.size() / sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), v.size());
  return status::ok();
}

status check_pair(const std::vector<std::int64_t>& src, const std::vector<std::int64_t>& dst,
                  std::string_view a, std::string_view b) {
  if (src.size() != dst.size())
    return make_error(errc::invalid_argument, "fields '{}' ({} ids) and '{}' ({} ids) differ in length",
                      a, src.size(), b, dst.size());
  return status::ok();
}

// k new nodes from add_nodes' rows (and add_count when the graph has no features).
status take_new_nodes(const hps::stream_entry& e, std::int64_t dim, graph::graph_update& u) {
  SPINDLE_TRY(take(e, "add_nodes", u.add_node_features));
  const std::string_view count = e.field("add_count");
  if (!count.empty()) {
    auto r = std::from_chars(count.data(), count.data() + count.size(), u.add_nodes);
    if (r.ec != std::errc() || r.ptr != count.data() + count.size() || u.add_nodes < 0)
      return make_error(errc::invalid_argument, "field 'add_count' is '{}', not a count", count);
  } else if (dim > 0) {
    if (u.add_node_features.size() % std::size_t(dim) != 0)
      return make_error(errc::invalid_argument,
                        "field 'add_nodes' holds {} values, not rows of the graph's {} features",
                        u.add_node_features.size(), dim);
    u.add_nodes = std::int64_t(u.add_node_features.size()) / dim;
  } else if (!u.add_node_features.empty()) {
    return make_error(errc::invalid_argument,
                      "field 'add_nodes' holds features, and the graph has none");
  }
  return status::ok();
}

}  // namespace

expected<graph::graph_update> graph_update_of_entry(const hps::stream_entry& e,
                                                    std::int64_t feature_dim) {
  for (std::size_t i = 0; i < e.fields.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (e.fields[i].first == e.fields[j].first)
        return make_error(errc::invalid_argument, "field '{}' appears more than once",
                          e.fields[i].first);
  for (const auto& [name, value] : e.fields)
    if (std::find(kFields.begin(), kFields.end(), name) == kFields.end())
      return make_error(errc::invalid_argument, "unknown field '{}' (fields: add_src, add_dst, "
                        "add_weight, remove_src, remove_dst, add_nodes, add_count, set_ids, "
                        "set_rows, remove_nodes)", name);
  graph::graph_update u;
  SPINDLE_TRY(take(e, "add_src", u.add_src));
  SPINDLE_TRY(take(e, "add_dst", u.add_dst));
  SPINDLE_TRY(check_pair(u.add_src, u.add_dst, "add_src", "add_dst"));
  SPINDLE_TRY(take(e, "add_weight", u.add_weight));
  SPINDLE_TRY(take(e, "remove_src", u.remove_src));
  SPINDLE_TRY(take(e, "remove_dst", u.remove_dst));
  SPINDLE_TRY(check_pair(u.remove_src, u.remove_dst, "remove_src", "remove_dst"));
  SPINDLE_TRY(take_new_nodes(e, feature_dim, u));
  SPINDLE_TRY(take(e, "set_ids", u.set_ids));
  SPINDLE_TRY(take(e, "set_rows", u.set_rows));
  SPINDLE_TRY(take(e, "remove_nodes", u.remove_nodes));
  if (u.empty()) return make_error(errc::invalid_argument, "the entry changes nothing");
  u.source_stream = e.stream;
  u.source_id = e.id;
  return u;
}

std::vector<std::pair<std::string, std::string>> entry_fields_of(const graph::graph_update& u) {
  std::vector<std::pair<std::string, std::string>> f;
  auto add = [&](std::string name, std::string bytes) {
    if (!bytes.empty()) f.emplace_back(std::move(name), std::move(bytes));
  };
  add("add_src", raw_bytes_of(u.add_src));
  add("add_dst", raw_bytes_of(u.add_dst));
  add("add_weight", raw_bytes_of(u.add_weight));
  add("remove_src", raw_bytes_of(u.remove_src));
  add("remove_dst", raw_bytes_of(u.remove_dst));
  add("add_nodes", raw_bytes_of(u.add_node_features));
  if (u.add_nodes > 0) add("add_count", std::to_string(u.add_nodes));
  add("set_ids", raw_bytes_of(u.set_ids));
  add("set_rows", raw_bytes_of(u.set_rows));
  add("remove_nodes", raw_bytes_of(u.remove_nodes));
  return f;
}

std::string graph_stream_group_of(const std::string& graph_log_path) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "host");
  std::error_code ec;
  const std::string path = std::filesystem::absolute(graph_log_path, ec).lexically_normal().string();
  return fmt::format("spindle-graph:{}:{:016x}", host, checksum(path.data(), path.size()));
}

expected<std::string> publish_graph_update(const std::string& endpoint, const std::string& stream,
                                           const graph::graph_update& u) {
  SPINDLE_ASSIGN_OR_RETURN(auto ep, hps::parse_endpoint(endpoint));
  SPINDLE_ASSIGN_OR_RETURN(auto c, hps::redis_connection::connect(ep.first, ep.second));
  const auto fields = entry_fields_of(u);
  if (fields.empty()) return make_error(errc::invalid_argument, "the update changes nothing");
  std::vector<std::string_view> argv{"XADD", stream, "*"};
  for (const auto& [k, v] : fields) argv.push_back(k), argv.push_back(v);
  SPINDLE_ASSIGN_OR_RETURN(auto r, c.command(argv));
  return std::string(r.str());
}

graph_stream_follower::graph_stream_follower(graph::live_graph& live, std::int64_t feature_dim,
                                             hps::stream_group g, graph_stream_options o)
    : live_(live), feature_dim_(feature_dim), group_(std::move(g)), o_(std::move(o)) {
  stats_.stream = o_.stream;
  stats_.group = group_.options().group;
  stats_.last_id = live_.last_source(o_.stream);
  stats_.connected = true;
}

expected<std::unique_ptr<graph_stream_follower>> graph_stream_follower::start(
    graph::live_graph& live, std::int64_t feature_dim, graph_stream_options o) {
  if (o.group.empty())
    return make_error(errc::invalid_argument, "graph stream {}: no consumer group", o.stream);
  SPINDLE_ASSIGN_OR_RETURN(auto ep, hps::parse_endpoint(o.endpoint));
  hps::stream_group_options g;
  g.group = o.group;
  g.consumer = o.group;  // one consumer per group: the stream's order is the graph's
  g.streams = {o.stream};
  const std::string last = live.last_source(o.stream);
  g.create_at = last.empty() ? "0" : last;
  g.read_count = o.read_count;
  g.block_ms = o.block_ms;
  g.claim_idle_ms = 0;
  auto group = hps::stream_group::connect(ep.first, ep.second, g);
  if (!group)
    return std::move(group).error().with_context(fmt::format("--graph-stream {}: ", o.endpoint));
  std::unique_ptr<graph_stream_follower> f(
      new graph_stream_follower(live, feature_dim, std::move(*group), std::move(o)));
  f->thread_ = std::thread([p = f.get()] { p->run(); });
  log::info("graph stream {} at {}: group {}, from entry {}", f->o_.stream, f->o_.endpoint,
            f->o_.group, last.empty() ? "0 (the start)" : last);
  return f;
}

graph_stream_follower::~graph_stream_follower() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

graph::stream_follow_stats graph_stream_follower::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

// The append time a stream id carries ("<ms>-<seq>", Redis's clock); 0 if unreadable.
static double appended_ms(const std::string& id) {
  double ms = 0;
  for (char ch : id) {
    if (ch == '-') return ms;
    if (ch < '0' || ch > '9') return 0;
    ms = ms * 10 + (ch - '0');
  }
  return 0;
}

status graph_stream_follower::apply(const hps::stream_entry& e) {
  const std::string last = live_.last_source(e.stream);
  if (!last.empty() && hps::compare_stream_ids(e.id, last) <= 0) {  // durable ones only
    std::lock_guard lock(mu_);
    ++stats_.duplicates;  // logged before a crash, delivered again: applied once
    return status::ok();
  }
  SPINDLE_ASSIGN_OR_RETURN(auto u, graph_update_of_entry(e, feature_dim_));
  SPINDLE_ASSIGN_OR_RETURN(auto staged, live_.stage(u));  // durable at commit(), below
  last_ticket_ = staged.ticket;
  staged_id_ = e.id;
  staged_ms_.push_back(appended_ms(e.id));
  return status::ok();
}

// The entries of one read share one log sync before they are acknowledged.
status graph_stream_follower::commit() {
  if (last_ticket_ == 0) return status::ok();
  const auto ticket = std::exchange(last_ticket_, 0);
  auto appended = std::exchange(staged_ms_, {});
  SPINDLE_TRY(live_.commit(ticket));
  const double now_ms = std::chrono::duration<double, std::milli>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  std::lock_guard lock(mu_);
  stats_.last_id = staged_id_;
  for (double at : appended)
    if (at > 0) stats_.note_staleness(std::max(0.0, now_ms - at));
  return status::ok();
}

bool graph_stream_follower::wait_caught_up(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return caught_up_cv_.wait_for(lock, timeout, [&] { return caught_up_; });
}

void graph_stream_follower::run() {
  auto wait = std::chrono::milliseconds(50);
  while (!stop_) {
    auto n = group_.poll([this](const hps::stream_entry& e) { return apply(e); },
                         [this] { return commit(); });
    {
      std::lock_guard lock(mu_);
      const auto& g = group_.stats();
      stats_.applied = g.applied - stats_.duplicates;
      stats_.rejected = g.rejected;
      stats_.connected = n.has_value();
      if (!n) ++stats_.errors;
      if (n && *n == 0 && !caught_up_) {
        caught_up_ = true;
        caught_up_cv_.notify_all();
      }
    }
    if (n) {
      wait = std::chrono::milliseconds(50);
      continue;
    }
    log::warn("graph stream {}: {} (retrying)", o_.stream, n.error().message());
    if (n.error().message().find("NOGROUP") != std::string::npos) {
      // Redis lost the stream or the group (restarted without persistence):
      // follow it again after the last entry this graph holds.
      const std::string last = live_.last_source(o_.stream);
      if (auto st = group_.recreate(last.empty() ? "0" : last); st)
        log::warn("graph stream {}: group {} was gone; created again after entry {}", o_.stream,
                  o_.group, last.empty() ? "0" : last);
    }
    std::this_thread::sleep_for(wait);  // Redis away, or the log failed: try again
    wait = std::min(wait * 2, std::chrono::milliseconds(2000));
  }
}

}  // namespace spindle::runtime
