#include "apps/commands/command.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace spindle::apps {

namespace {
std::vector<std::string>& argv_store() {
  static std::vector<std::string> a;
  return a;
}
}  // namespace

void set_process_argv(int argc, char** argv) { argv_store().assign(argv, argv + argc); }
const std::vector<std::string>& process_argv() { return argv_store(); }

thread_pool& global_options::pool() {
  if (!pool_) {
    std::size_t participants = threads > 0 ? static_cast<std::size_t>(threads) : available_cores();
    pool_ =
        std::make_unique<thread_pool>(std::max<std::size_t>(1, participants - 1), "spindle-pool");
  }
  return *pool_;
}

int report(const status& s) {
  if (s.is_ok()) return 0;
  fmt::print(stderr, "spindle: error: {}\n", s.message());
  return 1;
}

}  // namespace spindle::apps
