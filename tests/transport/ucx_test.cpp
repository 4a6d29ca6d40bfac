#include "transport/ucx/ucx.hpp"

#include <gtest/gtest.h>
#include <thread>
#include <chrono>
#include <fstream>
#include <filesystem>

#include <cstring>
#include <future>
#include <numeric>
#include <optional>
#include <random>

#include "transport/ucx/progress_loop.hpp"

namespace spindle::transport::ucx {
namespace {

struct pair_of_workers {
  explicit pair_of_workers(std::string_view tls = {}) : ctx(std::move(*context::create(tls))) {}
  context ctx;
  worker owner = std::move(*worker::create(ctx));
  worker reader = std::move(*worker::create(ctx));
};

// A page the owner maps for remote reads, and its descriptor.
struct exposed_page {
  mapped_memory mem;
  region_descriptor desc;
};
expected<exposed_page> expose_page(pair_of_workers& w) {
  SPINDLE_ASSIGN_OR_RETURN(auto mem, mapped_memory::allocate(w.ctx, 4096));
  SPINDLE_ASSIGN_OR_RETURN(auto desc, describe(w.owner, mem));
  return exposed_page{std::move(mem), std::move(desc)};
}

TEST(ucx_test, descriptor_round_trips_and_rejects_garbage) {
  region_descriptor d{{1, 2, 254}, {9, 8}, 0x7fff0000, 4096};
  auto back = region_descriptor::decode(d.encode());
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_EQ(back->worker_address, d.worker_address);
  EXPECT_EQ(back->rkey, d.rkey);
  EXPECT_EQ(back->base, d.base);
  EXPECT_EQ(back->length, d.length);
  EXPECT_FALSE(region_descriptor::decode("spr1:zz:10:0102:0304").has_value());
  EXPECT_FALSE(region_descriptor::decode("spr1:10:10:012:0304").has_value());
  EXPECT_FALSE(region_descriptor::decode("hello").has_value());
}

void check_random_gets(pair_of_workers& w, bool run_owner_loop) {
  auto mem = mapped_memory::allocate(w.ctx, 1 << 20);
  ASSERT_TRUE(mem.has_value()) << mem.error().to_string();
  for (std::size_t i = 0; i < mem->size(); ++i) mem->data()[i] = std::byte(i * 131 % 251);
  auto desc = describe(w.owner, *mem);
  ASSERT_TRUE(desc.has_value());
  std::optional<progress_loop> loop;
  if (run_owner_loop) loop.emplace(w.owner);
  auto region = remote_region::attach(w.reader, *desc);
  ASSERT_TRUE(region.has_value()) << region.error().to_string();
  std::vector<std::byte> out(1000 * 512);
  std::vector<read_op> ops;
  std::mt19937 rng(3);
  for (int i = 0; i < 1000; ++i)
    ops.push_back({std::uint64_t(rng() % 2048) * 512, out.data() + i * 512, 512});
  ASSERT_TRUE((*region)->read(ops).is_ok());
  for (const auto& op : ops)
    ASSERT_EQ(std::memcmp(op.dst, mem->data() + op.offset, 512), 0) << op.offset;
  read_op bad{std::uint64_t(1) << 20, out.data(), 1};
  EXPECT_EQ((*region)->read({&bad, 1}).code(), errc::invalid_argument);
}

// docs/architecture.md "Planes": on memory UCX allocated, shared-memory gets complete with
// the owner's worker idle.
TEST(ucx_test, shared_memory_gets_complete_while_the_owner_is_idle) {
  pair_of_workers w("shm,self");
  check_random_gets(w, false);
}

// Over TCP reads go as requests the owner's worker answers with the rows:
// they complete because the owner progresses.
TEST(ucx_test, tcp_reads_complete_with_the_owner_progress_loop) {
  pair_of_workers w("tcp");
  check_random_gets(w, true);
}

// A reader may only read what the owner mapped for remote access: a request
// for other memory is refused by the owner, naming the range.
TEST(ucx_test, tcp_reads_of_memory_the_owner_did_not_map_are_refused) {
  pair_of_workers w("tcp");
  auto page = expose_page(w);
  ASSERT_TRUE(page.has_value()) << page.error().to_string();
  std::vector<std::byte> secret(4096, std::byte{42});
  page->desc.base = reinterpret_cast<std::uint64_t>(secret.data());  // forged
  progress_loop loop(w.owner);
  auto region = remote_region::attach(w.reader, page->desc);
  ASSERT_TRUE(region.has_value()) << region.error().to_string();
  std::vector<std::byte> out(64);
  read_op op{0, out.data(), out.size()};
  auto st = (*region)->read({&op, 1});
  EXPECT_EQ(st.code(), errc::invalid_argument) << st.to_string();
  EXPECT_NE(st.message().find("not memory this node exposed"), std::string::npos) << st.message();
  EXPECT_EQ(out[0], std::byte{0});
}

// An owner that never answers (frozen) makes a read fail as unavailable within
// its timeout; the reader's worker is then kept until exit rather than
// destroyed under a request UCX cannot cancel, and nothing aborts.
TEST(ucx_test, a_read_from_a_silent_owner_times_out_and_keeps_the_worker) {
  pair_of_workers w("tcp");
  auto page = expose_page(w);
  ASSERT_TRUE(page.has_value()) << page.error().to_string();
  auto region = remote_region::attach(w.reader, page->desc, 300);  // nobody progresses the owner
  ASSERT_TRUE(region.has_value()) << region.error().to_string();
  std::vector<std::byte> out(64);
  read_op op{0, out.data(), out.size()};
  auto st = (*region)->read({&op, 1});
  EXPECT_EQ(st.code(), errc::unavailable) << st.to_string();
  EXPECT_TRUE(w.reader.kept_until_exit());
  EXPECT_EQ((*region)->read({&op, 1}).code(), errc::unavailable);  // stays down
}

TEST(ucx_test, active_messages_reach_the_handler) {
  pair_of_workers w;
  std::promise<std::string> got;
  ASSERT_TRUE(w.owner
                  .set_am_handler(7,
                                  [&](std::span<const std::byte> p) {
                                    got.set_value(std::string(
                                        reinterpret_cast<const char*>(p.data()), p.size()));
                                  })
                  .is_ok());
  auto addr = w.owner.address();
  progress_loop loop(w.owner);  // the owner's worker belongs to the loop from here on
  auto ep = endpoint::connect(w.reader, *addr);
  ASSERT_TRUE(ep.has_value());
  std::string msg = "gather 42";
  ASSERT_TRUE(ep->send_am(7, std::as_bytes(std::span(msg)), 5000).is_ok());
  auto f = got.get_future();
  while (f.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) w.reader.progress();
  EXPECT_EQ(f.get(), msg);
}

// Threads of this process named `name` (/proc/self/task/*/comm).
int threads_named(const std::string& name) {
  int n = 0;
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(t.path() / "comm");
    std::string line;
    if (std::getline(comm, line) && line == name) ++n;
  }
  return n;
}

// The loop runs its own thread while it lives and stops it, promptly, when destroyed.
TEST(ucx_test, progress_loop_starts_and_stops_cleanly) {
  pair_of_workers w;
  const int before = threads_named("ucx-progress");
  std::chrono::steady_clock::time_point stopping;
  {
    progress_loop loop(w.owner);
    // The thread names itself when it starts.
    for (int i = 0; i < 100 && threads_named("ucx-progress") == before; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(threads_named("ucx-progress"), before + 1);
    stopping = std::chrono::steady_clock::now();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, std::chrono::seconds(1));
  EXPECT_EQ(threads_named("ucx-progress"), before);
}

}  // namespace
}  // namespace spindle::transport::ucx
