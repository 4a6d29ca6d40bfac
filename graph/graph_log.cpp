#include "graph/graph_log.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/checksum.hpp"
#include "core/enum_names.hpp"

namespace spindle::graph {
namespace {

constexpr enum_names<log_sync, 2> kSyncs{{{{log_sync::data, "data"}, {log_sync::os, "os"}}}};

constexpr char kMagic[8] = {'S', 'P', 'G', 'L', 'O', 'G', '0', '1'};
constexpr std::uint32_t kRecordMagic = 0x5245434Fu;  // "OCER"
struct header {
  char magic[8];
  std::int64_t num_nodes, num_edges;
};
static_assert(sizeof(header) == kGraphLogHeaderBytes);
struct record_head {
  std::uint32_t magic, reserved;
  std::uint64_t version, bytes;
};

template <class T>
void put(std::string& out, std::span<const T> v) {
  const std::uint64_t n = v.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out.append(reinterpret_cast<const char*>(v.data()), v.size_bytes());
}

template <class T>
status take(std::string_view& in, std::vector<T>& v, std::string_view field) {
  std::uint64_t n = 0;
  if (in.size() < sizeof n) return make_error(errc::corrupt_data, "graph log: {} cut short", field);
  std::memcpy(&n, in.data(), sizeof n);
  in.remove_prefix(sizeof n);
  if (n > in.size() / sizeof(T))
    return make_error(errc::corrupt_data, "graph log: {} claims {} items, {} bytes remain", field,
                      n, in.size());
  v.resize(n);
  std::memcpy(v.data(), in.data(), n * sizeof(T));
  in.remove_prefix(n * sizeof(T));
  return status::ok();
}

status write_all(int fd, const void* data, std::size_t size, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t w = ::write(fd, p, size);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return make_error(errc::io_error, "{}: write: {}", path, std::strerror(errno));
    p += w;
    size -= std::size_t(w);
  }
  return status::ok();
}

status write_header(int fd, const csr_view& g, const std::string& path) {
  header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.num_nodes = g.num_nodes;
  h.num_edges = g.num_edges();
  SPINDLE_TRY(write_all(fd, &h, sizeof h, path));
  if (::fdatasync(fd) != 0)
    return make_error(errc::io_error, "{}: fdatasync: {}", path, std::strerror(errno));
  return status::ok();
}

}  // namespace

std::string_view to_string(log_sync s) { return kSyncs.name(s); }
expected<log_sync> parse_log_sync(std::string_view text) {
  return kSyncs.parse(text, "--graph-log-sync");
}

namespace {

// A typed batch's groups (the record's last tail): counts, then each group.
void put_edges(std::string& out, const std::vector<typed_edges>& groups) {
  for (const auto& e : groups) {
    put<char>(out, e.type);
    put<std::int64_t>(out, e.src);
    put<std::int64_t>(out, e.dst);
    put<float>(out, e.weight);
  }
}

void put_typed(std::string& out, const graph_update& u) {
  const std::int64_t counts[] = {std::int64_t(u.add_typed.size()),
                                 std::int64_t(u.remove_typed.size()), std::int64_t(u.nodes.size())};
  put<std::int64_t>(out, counts);
  put_edges(out, u.add_typed);
  put_edges(out, u.remove_typed);
  for (const auto& n : u.nodes) {
    put<char>(out, n.type);
    const std::int64_t add[] = {n.add};
    put<std::int64_t>(out, add);
    put<float>(out, n.add_rows);
    put<std::int64_t>(out, n.set_ids);
    put<float>(out, n.set_rows);
    put<std::int64_t>(out, n.remove);
  }
}

status take_text(std::string_view& in, std::string& s, std::string_view field) {
  std::vector<char> v;
  SPINDLE_TRY(take(in, v, field));
  s.assign(v.begin(), v.end());
  return status::ok();
}

status take_edges(std::string_view& in, std::size_t n, std::vector<typed_edges>& out) {
  out.resize(n);
  for (auto& e : out) {
    SPINDLE_TRY(take_text(in, e.type, "edge type"));
    SPINDLE_TRY(take(in, e.src, "typed src"));
    SPINDLE_TRY(take(in, e.dst, "typed dst"));
    SPINDLE_TRY(take(in, e.weight, "typed weight"));
  }
  return status::ok();
}

status take_typed(std::string_view& in, graph_update& u) {
  std::vector<std::int64_t> counts, add;
  SPINDLE_TRY(take(in, counts, "typed counts"));
  if (counts.size() != 3 || counts[0] < 0 || counts[1] < 0 || counts[2] < 0 ||
      std::uint64_t(counts[0] + counts[1] + counts[2]) > in.size())
    return make_error(errc::corrupt_data, "graph log: a typed record's counts are not a batch's");
  SPINDLE_TRY(take_edges(in, std::size_t(counts[0]), u.add_typed));
  SPINDLE_TRY(take_edges(in, std::size_t(counts[1]), u.remove_typed));
  u.nodes.resize(std::size_t(counts[2]));
  for (auto& n : u.nodes) {
    SPINDLE_TRY(take_text(in, n.type, "node type"));
    SPINDLE_TRY(take(in, add, "typed add"));
    if (add.size() != 1)
      return make_error(errc::corrupt_data, "graph log: typed add is not a count");
    n.add = add[0];
    SPINDLE_TRY(take(in, n.add_rows, "typed add_rows"));
    SPINDLE_TRY(take(in, n.set_ids, "typed set_ids"));
    SPINDLE_TRY(take(in, n.set_rows, "typed set_rows"));
    SPINDLE_TRY(take(in, n.remove, "typed remove"));
  }
  return status::ok();
}

}  // namespace

std::string encode_update(const graph_update& u) {
  std::string out;
  put<std::int64_t>(out, u.add_src);
  put<std::int64_t>(out, u.add_dst);
  put<float>(out, u.add_weight);
  put<std::int64_t>(out, u.remove_src);
  put<std::int64_t>(out, u.remove_dst);
  const std::int64_t add[] = {u.add_nodes};
  put<std::int64_t>(out, add);
  put<float>(out, u.add_node_features);
  put<std::int64_t>(out, u.set_ids);
  put<float>(out, u.set_rows);
  put<std::int64_t>(out, u.remove_nodes);
  // Optional tails: logs of door batches stay as they were; a typed batch's groups last.
  if (!u.source_stream.empty() || u.typed()) {
    put<char>(out, u.source_stream);
    put<char>(out, u.source_id);
  }
  if (u.typed()) put_typed(out, u);  // a second optional tail: a typed batch's groups
  return out;
}

expected<graph_update> decode_update(std::string_view in) {
  graph_update u;
  std::vector<std::int64_t> add;
  SPINDLE_TRY(take(in, u.add_src, "add_src"));
  SPINDLE_TRY(take(in, u.add_dst, "add_dst"));
  SPINDLE_TRY(take(in, u.add_weight, "add_weight"));
  SPINDLE_TRY(take(in, u.remove_src, "remove_src"));
  SPINDLE_TRY(take(in, u.remove_dst, "remove_dst"));
  SPINDLE_TRY(take(in, add, "add_nodes"));
  SPINDLE_TRY(take(in, u.add_node_features, "add_node_features"));
  SPINDLE_TRY(take(in, u.set_ids, "set_ids"));
  SPINDLE_TRY(take(in, u.set_rows, "set_rows"));
  SPINDLE_TRY(take(in, u.remove_nodes, "remove_nodes"));
  if (!in.empty()) {
    std::vector<char> stream, id;
    SPINDLE_TRY(take(in, stream, "source_stream"));
    SPINDLE_TRY(take(in, id, "source_id"));
    u.source_stream.assign(stream.begin(), stream.end());
    u.source_id.assign(id.begin(), id.end());
  }
  if (!in.empty()) SPINDLE_TRY(take_typed(in, u));
  if (add.size() != 1 || !in.empty())
    return make_error(errc::corrupt_data, "graph log: a record's layout is not a batch's");
  u.add_nodes = add[0];
  return u;
}

expected<std::unique_ptr<graph_log>> graph_log::open(const std::string& path, const csr_view& g,
                                                     log_sync sync) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(errc::io_error, "{}: open: {}", path, std::strerror(errno));
  std::unique_ptr<graph_log> log(new graph_log(path, std::make_shared<file>(fd), sync));
  // One writer per log: a second server on the same file would interleave records.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0)
    return make_error(errc::unavailable,
                      "{}: another process holds this graph log (a second server on the same "
                      "dataset?): give each server its own --graph-log",
                      path);
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return make_error(errc::io_error, "{}: stat: {}", path, std::strerror(errno));
  header h{};
  if (std::uint64_t(st.st_size) < sizeof h) {
    // A new log, or one whose creation was cut short before any record: its
    // header, made durable before any record.
    if (st.st_size > 0 && ::ftruncate(fd, 0) != 0)
      return make_error(errc::io_error, "{}: truncate: {}", path, std::strerror(errno));
    SPINDLE_TRY(write_header(fd, g, path));
    log->end_ = log->synced_end_ = sizeof h;
    return log;
  }
  if (::pread(fd, &h, sizeof h, 0) != ssize_t(sizeof h) ||
      std::memcmp(h.magic, kMagic, sizeof kMagic) != 0)
    return make_error(errc::corrupt_data, "{}: not a Spindle graph log (bad header)", path);
  if (h.num_nodes != g.num_nodes || h.num_edges != g.num_edges())
    return make_error(errc::invalid_argument,
                      "{}: written for a graph of {} nodes and {} edges, this dataset has {} and "
                      "{}: move the log away or serve the dataset it belongs to",
                      path, h.num_nodes, h.num_edges, g.num_nodes, g.num_edges());
  log->end_ = log->synced_end_ = sizeof h;
  return log;
}

expected<log_summary> summarize_log(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(errc::io_error, "{}: open: {}", path, std::strerror(errno));
  struct stat st {};
  ::fstat(fd, &st);
  log_summary s;
  s.bytes = std::uint64_t(st.st_size);
  std::uint64_t at = sizeof(header);
  record_head h{};
  while (s.bytes - std::min(at, s.bytes) >= sizeof h &&
         ::pread(fd, &h, sizeof h, off_t(at)) == ssize_t(sizeof h) && h.magic == kRecordMagic &&
         h.bytes <= s.bytes - at - sizeof h &&
         s.bytes - at - sizeof h - h.bytes >= sizeof(std::uint64_t)) {
    ++s.records;
    s.last_version = h.version;
    at += sizeof h + h.bytes + sizeof(std::uint64_t);
  }
  ::close(fd);
  return s;
}

graph_log::file::~file() {
  if (fd >= 0) ::close(fd);
}

expected<log_replay> graph_log::replay(live_graph& lg) {
  const int fd_ = file_->fd;
  struct stat st {};
  if (::fstat(fd_, &st) != 0)
    return make_error(errc::io_error, "{}: stat: {}", path_, std::strerror(errno));
  const std::uint64_t size = std::uint64_t(st.st_size);
  log_replay out;
  std::uint64_t at = end_;
  std::string payload;
  while (at < size) {
    record_head h{};
    const bool whole_head = size - at >= sizeof h && ::pread(fd_, &h, sizeof h, off_t(at)) == ssize_t(sizeof h);
    const std::uint64_t need = sizeof h + (whole_head ? h.bytes : 0) + sizeof(std::uint64_t);
    const bool fits = whole_head && h.magic == kRecordMagic && h.bytes <= size - at &&
                      need <= size - at;
    std::uint64_t sum = 0;
    if (fits) {
      payload.resize(h.bytes);
      if (::pread(fd_, payload.data(), h.bytes, off_t(at + sizeof h)) != ssize_t(h.bytes) ||
          ::pread(fd_, &sum, sizeof sum, off_t(at + sizeof h + h.bytes)) != ssize_t(sizeof sum))
        return make_error(errc::io_error, "{}: read at {}: {}", path_, at, std::strerror(errno));
    }
    checksum_stream c;
    if (fits) c.update(&h, sizeof h), c.update(payload.data(), payload.size());
    if (!fits || c.digest() != sum) {
      if (fits && at + need < size)  // damage with whole records after it: not a torn tail
        return make_error(errc::corrupt_data,
                          "{}: record at byte {} fails its checksum and records follow it", path_,
                          at);
      out.torn_bytes = size - at;
      if (::ftruncate(fd_, off_t(at)) != 0)
        return make_error(errc::io_error, "{}: truncate: {}", path_, std::strerror(errno));
      break;
    }
    SPINDLE_ASSIGN_OR_RETURN(auto u, decode_update(payload));
    // Records the base already holds (a crash between a compaction's switch of
    // base and its new log) are skipped.
    if (h.version <= lg.version()) {
      ++out.skipped;
      at += need;
      continue;
    }
    if (auto st2 = lg.replay(u, h.version); !st2)
      return std::move(st2).with_context(fmt::format("{}: record at byte {}: ", path_, at));
    ++out.records;
    at += need;
  }
  end_ = synced_end_ = at;  // what replay read back is on disk
  return out;
}

status graph_log::append(const graph_update& u, std::uint64_t version) {
  SPINDLE_TRY(write(u, version));
  return sync();
}

status graph_log::write(const graph_update& u, std::uint64_t version) {
  const std::string payload = encode_update(u);
  record_head h{kRecordMagic, 0, version, payload.size()};
  checksum_stream c;
  c.update(&h, sizeof h);
  c.update(payload.data(), payload.size());
  const std::uint64_t sum = c.digest();
  std::string rec;
  rec.reserve(sizeof h + payload.size() + sizeof sum);
  rec.append(reinterpret_cast<const char*>(&h), sizeof h);
  rec += payload;
  rec.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  std::lock_guard lock(mu_);
  const int fd_ = file_->fd;
  if (::lseek(fd_, off_t(end_), SEEK_SET) < 0)
    return make_error(errc::io_error, "{}: seek: {}", path_, std::strerror(errno));
  if (auto st = write_all(fd_, rec.data(), rec.size(), path_); !st) {
    (void)::ftruncate(fd_, off_t(end_));  // no half record stays behind a refusal
    return st;
  }
  end_ += rec.size();
  return status::ok();
}

status graph_log::sync() {
  std::uint64_t upto = 0, generation = 0;
  std::shared_ptr<const file> f;
  std::string path;
  {
    std::lock_guard lock(mu_);
    upto = end_;
    if (sync_ != log_sync::data || upto <= synced_end_) {
      synced_end_ = std::max(synced_end_, upto);
      return status::ok();
    }
    ++syncs_;
    f = file_;
    generation = generation_;
    path = path_;
  }
  const bool ok = ::fdatasync(f->fd) == 0;
  const int err = errno;
  std::lock_guard lock(mu_);
  // A compaction switched files meanwhile: the new one holds every record
  // written before the switch, made durable by it.
  if (generation != generation_) return status::ok();
  if (!ok) return make_error(errc::io_error, "{}: fdatasync: {}", path, std::strerror(err));
  synced_end_ = std::max(synced_end_, upto);
  return status::ok();
}

void graph_log::rollback() {
  std::lock_guard lock(mu_);
  if (end_ > synced_end_ && ::ftruncate(file_->fd, off_t(synced_end_)) == 0) end_ = synced_end_;
}

status graph_log::continue_in(const std::string& path, const csr_view& g,
                              std::uint64_t after_version, const std::function<status()>& adopt) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(errc::io_error, "{}: open: {}", path, std::strerror(errno));
  auto next = std::make_shared<file>(fd);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0)
    return make_error(errc::unavailable, "{}: another process holds this graph log", path);
  SPINDLE_TRY(write_header(fd, g, path));
  std::uint64_t at = sizeof(header), out = sizeof(header);
  std::string rec;
  // Copies the records in [at, to) after after_version (whole records only).
  auto copy_to = [&](const file& from, const std::string& from_path, std::uint64_t to) -> status {
    while (at < to) {
      record_head h{};
      if (::pread(from.fd, &h, sizeof h, off_t(at)) != ssize_t(sizeof h))
        return make_error(errc::io_error, "{}: read at {}: {}", from_path, at, std::strerror(errno));
      const std::uint64_t need = sizeof h + h.bytes + sizeof(std::uint64_t);
      if (h.version > after_version) {
        rec.resize(need);
        if (::pread(from.fd, rec.data(), need, off_t(at)) != ssize_t(need))
          return make_error(errc::io_error, "{}: read at {}: {}", from_path, at,
                            std::strerror(errno));
        SPINDLE_TRY(write_all(fd, rec.data(), rec.size(), path));
        out += need;
      }
      at += need;
    }
    return status::ok();
  };
  // The durable part first, with appends going on (a rollback never cuts it),
  // then what was written since, with appends held.
  std::shared_ptr<file> old;
  std::uint64_t durable = 0;
  std::string old_path;
  {
    std::lock_guard lock(mu_);
    old = file_;
    durable = synced_end_;
    old_path = path_;
  }
  SPINDLE_TRY(copy_to(*old, old_path, durable));
  std::lock_guard lock(mu_);
  SPINDLE_TRY(copy_to(*file_, path_, end_));
  if (::fdatasync(fd) != 0)
    return make_error(errc::io_error, "{}: fdatasync: {}", path, std::strerror(errno));
  SPINDLE_TRY(adopt());  // no record is appended to either file meanwhile
  file_ = std::move(next);  // the old file closes when no sync holds it
  path_ = path;
  end_ = synced_end_ = out;
  ++generation_;
  return status::ok();
}

std::string graph_log::path() const {
  std::lock_guard lock(mu_);
  return path_;
}

std::uint64_t graph_log::bytes() const {
  std::lock_guard lock(mu_);
  return end_;
}

std::uint64_t graph_log::syncs() const {
  std::lock_guard lock(mu_);
  return syncs_;
}

}  // namespace spindle::graph
