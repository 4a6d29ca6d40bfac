// What `spindle launch` decides about its ranks without starting any: which
// hosts are this machine, and the launcher's command line for another host
// ({host} and {rank} in it replaced, the rank's words quoted for the shell).
#include "runtime/launched_ranks.hpp"

#include <gtest/gtest.h>

namespace spindle::runtime {
namespace {

TEST(launched_ranks_test, loopback_hosts_run_here_and_others_through_the_launcher) {
  EXPECT_TRUE(is_this_machine("127.0.0.1"));
  EXPECT_TRUE(is_this_machine("localhost"));
  EXPECT_FALSE(is_this_machine("127.0.0.2"));  // a netns address: the launcher starts it
  EXPECT_TRUE(is_loopback("127.0.0.2"));
  EXPECT_FALSE(is_loopback("10.0.0.1"));
}

TEST(launched_ranks_test, the_launcher_line_fills_host_and_rank_and_quotes_every_word) {
  const auto argv =
      launcher_argv("ssh {host} -- rank{rank}", "node7", 3, {"/bin/spindle", "it's", "a b"});
  ASSERT_EQ(argv.size(), 3u);
  EXPECT_EQ(argv[0], "/bin/sh");
  EXPECT_EQ(argv[2], "exec ssh node7 -- rank3 '/bin/spindle' 'it'\\''s' 'a b'");
}

}  // namespace
}  // namespace spindle::runtime
