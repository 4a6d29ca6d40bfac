// The recommendation models' dynamic batcher on the gateway's worker pool: a
// worker's turn merges every call queued for a model (up to its sample budget)
// into one forward pass, work-conserving (nothing waits for a batch to fill),
// refuses calls already past their deadline, splits a large batch over idle
// workers, and runs each call alone when the merged batch fails.
#pragma once

#include "actors/gateway_state.hpp"

namespace spindle::actors::detail {

/// One worker's turn for model `e` (submitted to its pool once per queued call).
void run_pending(rec_entry& e);

}  // namespace spindle::actors::detail
