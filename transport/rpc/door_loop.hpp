// How the Cap'n Proto door's event-loop thread waits: until the stop, polling a
// while after a lone client's call instead of sleeping at once; then, stopping,
// a grace period that answers the calls still arriving. Needs the loop's
// answer mailboxes (answer_mailbox.hpp), whose counters it reads.
#pragma once

#include <kj/async-io.h>

namespace spindle::transport::rpc {

/// Runs the loop until `stop` resolves. `poll_us` 0: sleeps whenever idle.
void run_until_stopped(kj::AsyncIoContext& io, kj::Promise<void> stop, unsigned poll_us);

/// After the stop: reads and answers (the service refusing new calls by name)
/// until no call has come for 50 ms, none is owed an answer and every answer is
/// sent, for at most 2 s.
void drain_after_stop(kj::WaitScope& ws);

}  // namespace spindle::transport::rpc
