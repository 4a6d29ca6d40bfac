#include "actors/ucx_bridge.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <cstring>
#include <map>
#include <set>

#include "core/log.hpp"
#include "transport/ucx/am_channel.hpp"

namespace spindle::actors {
namespace {

// A frame's header; the payload is a CAF-serialized message (request, reply) or
// UTF-8 error text. Integers are in host order: every rank runs the same build
// on the same architecture (stated in README's cluster section).
enum class frame_kind : std::uint8_t { request = 1, reply = 2, error = 3 };

struct frame_header {
  frame_kind kind = frame_kind::request;
  std::uint64_t id = 0;
  std::int32_t from = 0;
  std::string target;  // request only
};

std::vector<char> encode(const frame_header& h) {
  std::vector<char> out(1 + 8 + 4 + 2 + h.target.size());
  auto* p = out.data();
  const auto kind = std::uint8_t(h.kind);
  const auto len = std::uint16_t(h.target.size());
  std::memcpy(p, &kind, 1);
  std::memcpy(p + 1, &h.id, 8);
  std::memcpy(p + 9, &h.from, 4);
  std::memcpy(p + 13, &len, 2);
  std::memcpy(p + 15, h.target.data(), h.target.size());
  return out;
}

expected<frame_header> decode(const std::vector<char>& in) {
  frame_header h;
  std::uint8_t kind = 0;
  std::uint16_t len = 0;
  if (in.size() < 15)
    return make_error(errc::corrupt_data, "bridge frame: {}-byte header", in.size());
  std::memcpy(&kind, in.data(), 1);
  std::memcpy(&h.id, in.data() + 1, 8);
  std::memcpy(&h.from, in.data() + 9, 4);
  std::memcpy(&len, in.data() + 13, 2);
  if (kind < 1 || kind > 3) return make_error(errc::corrupt_data, "bridge frame: kind {}", kind);
  if (in.size() != 15u + len)
    return make_error(errc::corrupt_data, "bridge frame: target length {} in a {}-byte header", len,
                      in.size());
  h.kind = frame_kind(kind);
  h.target.assign(in.data() + 15, len);
  return h;
}

std::vector<char> text_bytes(std::string_view s) {
  auto* p = s.data();
  return {p, p + s.size()};
}

caf::error bridge_error(std::string text) {
  return caf::make_error(caf::sec::runtime_error, std::move(text));
}

struct pending_forward {
  int rank;
  caf::response_promise promise;
};

struct bridge_state {
  int rank = 0;
  std::chrono::milliseconds timeout{};
  std::shared_ptr<transport::ucx::am_channel> channel;
  std::map<std::string, caf::actor> targets;
  std::map<std::uint64_t, pending_forward> pending;
  std::set<int> down;
  std::uint64_t next_id = 1;
};

using bridge_ptr = caf::stateful_actor<bridge_state>*;

expected<std::vector<char>> serialize(caf::actor_system& sys, caf::message& m) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  if (auto err = sink(m))
    return make_error(errc::invalid_argument, "bridge: cannot serialize {}: {}", to_string(m),
                      to_string(err));
  return buf;  // sent as is: the frame's payload
}

expected<caf::message> deserialize(caf::actor_system& sys, const std::vector<char>& bytes) {
  caf::message m;
  caf::binary_deserializer source{sys, bytes.data(), bytes.size()};
  if (auto err = source(m))
    return make_error(errc::corrupt_data, "bridge: cannot deserialize a {}-byte message: {}",
                      bytes.size(), to_string(err));
  return m;
}

void fail_rank(bridge_ptr self, int rank, const std::string& why) {
  auto& st = self->state;
  for (auto it = st.pending.begin(); it != st.pending.end();) {
    if (it->second.rank != rank) {
      ++it;
      continue;
    }
    it->second.promise.deliver(bridge_error(why));
    it = st.pending.erase(it);
  }
}

void send_error(bridge_ptr self, int to, std::uint64_t id, const std::string& text) {
  self->state.channel->post(to, encode({frame_kind::error, id, self->state.rank, {}}),
                            text_bytes(text));
}

// A request from another rank: ask the named local target, ship its reply back.
void serve_request(bridge_ptr self, const frame_header& h, std::vector<char>& payload) {
  auto& st = self->state;
  auto target = st.targets.find(h.target);
  if (target == st.targets.end())
    return send_error(self, h.from, h.id,
                      fmt::format("rank {} has no actor named '{}'", st.rank, h.target));
  auto msg = deserialize(self->system(), payload);
  if (!msg) return send_error(self, h.from, h.id, msg.error().to_string());
  const int from = h.from;
  const std::uint64_t id = h.id;
  self->request(target->second, caf::infinite, bridge_call_atom::value, std::move(*msg))
      .then(
          [=](bridge_reply& r) {
            auto bytes = serialize(self->system(), r.content);
            if (!bytes) return send_error(self, from, id, bytes.error().to_string());
            self->state.channel->post(from, encode({frame_kind::reply, id, self->state.rank, {}}),
                                      std::move(*bytes));
          },
          [=](caf::error& e) { send_error(self, from, id, error_text(e)); });
}

// A reply or error for one of our forwards.
void complete(bridge_ptr self, const frame_header& h, std::vector<char>& payload) {
  auto& st = self->state;
  auto it = st.pending.find(h.id);
  if (it == st.pending.end()) return;  // expired or failed already
  auto promise = std::move(it->second.promise);
  st.pending.erase(it);
  if (h.kind == frame_kind::error) {
    promise.deliver(bridge_error(std::string(payload.data(), payload.size())));
    return;
  }
  auto msg = deserialize(self->system(), payload);
  if (!msg) return promise.deliver(bridge_error(msg.error().to_string()));
  promise.deliver(std::move(*msg));
}

caf::behavior bridge_actor(bridge_ptr self, bridge_options opt,
                           std::shared_ptr<transport::ucx::am_channel> channel) {
  auto& st = self->state;
  st.rank = opt.rank;
  st.timeout = opt.timeout;
  st.channel = std::move(channel);
  // The channel thread holds a handle to this actor: stop it when the actor ends.
  self->attach_functor([self] { self->state.channel.reset(); });
  return {
      [=](register_atom, const std::string& name, caf::actor target) {
        self->state.targets[name] = std::move(target);
      },
      [=](peer_atom, int rank, std::string& address) {
        self->state.down.erase(rank);
        self->state.channel->connect(rank, std::move(address));
      },
      [=](peer_down_atom, int rank) {
        self->state.down.insert(rank);
        self->state.channel->disconnect(rank);
        fail_rank(self, rank, fmt::format("rank {} is down", rank));
      },
      [=](peer_down_atom, int rank, const std::string& why) {
        fail_rank(self, rank, fmt::format("rank {} is unreachable: {}", rank, why));
      },
      [=](forward_atom, int rank, std::string& target,
          caf::message& m) -> caf::result<caf::message> {
        auto& s = self->state;
        if (s.down.count(rank)) return bridge_error(fmt::format("rank {} is down", rank));
        auto bytes = serialize(self->system(), m);
        if (!bytes) return bridge_error(bytes.error().to_string());
        const std::uint64_t id = s.next_id++;
        auto rp = self->make_response_promise();
        s.pending.emplace(id, pending_forward{rank, rp});
        s.channel->post(rank, encode({frame_kind::request, id, s.rank, std::move(target)}),
                        std::move(*bytes));
        self->delayed_send(self, s.timeout, expire_atom::value, id);
        return rp;
      },
      [=](expire_atom, std::uint64_t id) {
        auto it = self->state.pending.find(id);
        if (it == self->state.pending.end()) return;
        it->second.promise.deliver(bridge_error(fmt::format(
            "no reply from rank {} within {} ms", it->second.rank, self->state.timeout.count())));
        self->state.pending.erase(it);
      },
      [=](inbound_atom, bridge_frame& f) {
        auto h = decode(f.header);
        if (!h)
          return log::warn("ucx bridge (rank {}): {}", self->state.rank, h.error().to_string());
        if (h->kind == frame_kind::request)
          serve_request(self, *h, f.payload);
        else
          complete(self, *h, f.payload);
      },
      [=](stats_atom) {
        auto& s = self->state;
        return caf::make_message(s.channel->sent(), s.channel->received(),
                                 std::uint64_t(s.pending.size()));
      },
  };
}

}  // namespace

expected<bridge_handle> spawn_bridge(caf::actor_system& sys, bridge_options options) {
  // The channel's callbacks need the actor, the actor owns the channel: the
  // callbacks reach the actor through a slot filled right after spawning.
  auto slot = std::make_shared<caf::actor>();
  auto ready = std::make_shared<std::atomic<bool>>(false);
  auto on_frame = [slot, ready](std::vector<char> header, std::vector<char> payload) {
    if (ready->load(std::memory_order_acquire))
      caf::anon_send(*slot, inbound_atom::value,
                     bridge_frame{std::move(header), std::move(payload)});
  };
  auto on_failure = [slot, ready](int peer, const status& why) {
    if (ready->load(std::memory_order_acquire))
      caf::anon_send(*slot, peer_down_atom::value, peer, why.to_string());
  };
  SPINDLE_ASSIGN_OR_RETURN(
      auto channel, transport::ucx::am_channel::start(on_frame, on_failure, options.transports));
  bridge_handle h;
  h.address = channel->address();
  h.actor = sys.spawn(bridge_actor, options,
                      std::shared_ptr<transport::ucx::am_channel>(std::move(channel)));
  *slot = h.actor;
  ready->store(true, std::memory_order_release);
  return h;
}

}  // namespace spindle::actors
