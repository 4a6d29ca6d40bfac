// Connection admission for every door of a process (Cap'n Proto, KServe HTTP
// and gRPC, /metrics): a cap per door, a cap per peer address on each door,
// and one descriptor budget for all doors together in which each door keeps a
// guaranteed share (a flood on one door cannot take another door's). A door
// that is full makes room by closing its connection idle longest (the door
// decides which); a refusal is counted and logged at most once per 10 s.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace spindle::transport::net {

enum class admission { admitted, door_full, peer_full, process_full };

/// The process-wide limits: descriptors all doors may hold together (the
/// descriptor limit less a reserve for files, CAF, UCX and the listeners), the
/// share of them each door is guaranteed whatever the others hold, and the
/// connections one peer address may hold on one door.
struct process_limits {
  std::size_t descriptors = 0;
  std::size_t reserve_per_door = 0;
  std::size_t per_peer = 0;
};
process_limits limits();
/// Connections one door keeps open by default: the descriptor limit less 64,
/// at most 4,096.
std::size_t default_max_connections();
/// Sets the per-peer cap of each door (0: an eighth of the descriptor
/// budget); call before any door opens (`--max-connections-per-peer`).
void set_max_per_peer(std::size_t n);

/// One door's admission state; used from the door's own thread only (the
/// process-wide counts it shares are locked).
class door_gate {
 public:
  /// `fds_per_connection`: descriptors one admitted connection holds (2 where
  /// the door keeps a duplicate to watch a socket another library owns).
  door_gate(std::string name, std::size_t max_connections, std::size_t fds_per_connection = 1);
  ~door_gate();
  door_gate(const door_gate&) = delete;
  door_gate& operator=(const door_gate&) = delete;

  /// Takes a slot for a connection from `peer` (its address, no port).
  admission admit(const std::string& peer);
  /// Gives back the slot of an admitted connection from `peer`.
  void release(const std::string& peer);
  /// Counts a connection closed unadmitted (logged at most once per 10 s).
  void refused(admission why, const std::string& peer);
  /// Counts a connection closed to make room (logged as refusals are).
  void evicted(double idle_s);

  /// Logs refusals and evictions not yet reported, if 10 s passed since the last
  /// report (call from the door's periodic sweep).
  void tick() { report_if_due(); }

  std::size_t open() const { return open_; }
  std::size_t max_connections() const { return max_; }
  std::uint64_t refused_total() const { return refused_total_; }

 private:
  void report_if_due();
  std::string name_;
  std::size_t max_, fds_;
  std::size_t open_ = 0;
  std::uint64_t refused_total_ = 0, refused_door_ = 0, refused_peer_ = 0, refused_process_ = 0,
                evicted_ = 0;
  std::string last_peer_;
  double last_report_s_ = 0;
};

/// A connection idle at least this long may be closed to make room.
inline constexpr double kEvictIdleSeconds = 1.0;

/// Accepting when the process is out of descriptors (EMFILE/ENFILE): closes
/// a descriptor kept for this, accepts one pending connection and closes it
/// (its client sees the connection end instead of waiting in the backlog),
/// then takes the spare descriptor again. One per listener thread.
class spare_descriptor {
 public:
  spare_descriptor();
  ~spare_descriptor();
  spare_descriptor(const spare_descriptor&) = delete;
  spare_descriptor& operator=(const spare_descriptor&) = delete;
  /// Drains one pending connection of `listen_fd`; true if one was closed.
  bool shed_one(int listen_fd);

 private:
  int fd_ = -1;
};

/// After a flood (the doors' open connections fell far below their peak),
/// hands freed heap memory back to the system (core/allocator), at most once per
/// 5 s; cheap to call from every door's periodic sweep.
void return_memory_after_flood();

}  // namespace spindle::transport::net
