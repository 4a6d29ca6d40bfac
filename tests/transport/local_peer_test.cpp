// A loopback connection is the relay's own only when this process opened it: a
// connection from this process is recognised, one from another process (a
// forked child here) is not, and a descriptor that is no TCP socket is not.
#include "transport/net/local_peer.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/loopback_socket.hpp"

namespace spindle::transport::net {
namespace {

struct peer_listener {
  int fd = -1, port = 0;
  peer_listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd, 4), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~peer_listener() { ::close(fd); }
};

TEST(local_peer_test, a_connection_this_process_opened_is_its_own) {
  peer_listener l;
  const int c = testing::dial_loopback(l.port);
  ASSERT_GE(c, 0);
  const int s = ::accept(l.fd, nullptr, nullptr);
  ASSERT_GE(s, 0);
  EXPECT_TRUE(from_this_process(s));
  ::close(s);
  ::close(c);
}

TEST(local_peer_test, a_connection_from_another_process_is_not) {
  peer_listener l;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the other process: connect, then wait to be stopped
    const int c = testing::dial_loopback(l.port);
    ::pause();
    ::_exit(c >= 0 ? 0 : 1);
  }
  const int s = ::accept(l.fd, nullptr, nullptr);
  ASSERT_GE(s, 0);
  EXPECT_FALSE(from_this_process(s));
  ::close(s);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST(local_peer_test, a_descriptor_that_is_no_tcp_socket_is_not) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  EXPECT_FALSE(from_this_process(p[0]));
  ::close(p[0]);
  ::close(p[1]);
  EXPECT_FALSE(from_this_process(-1));
}

}  // namespace
}  // namespace spindle::transport::net
