#include "runtime/cluster_token.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/log.hpp"
#include "core/signals.hpp"
#include "core/text_file.hpp"
#include "runtime/token_file.hpp"

namespace spindle::runtime {
namespace {

constexpr std::size_t kMinClusterToken = 16;

// The token's text: its first line without trailing blanks; refused when empty or short.
expected<std::string> usable_token(std::string text, const std::string& where) {
  text = text.substr(0, text.find('\n'));
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ' || text.back() == '\t'))
    text.pop_back();
  if (text.empty()) return make_error(errc::invalid_argument, "{} is empty: no cluster token", where);
  if (text.size() < kMinClusterToken)
    return make_error(errc::invalid_argument,
                      "{} holds {} characters: a cluster token needs at least {}", where,
                      text.size(), kMinClusterToken);
  return text;
}

expected<std::string> token_from_file(const std::string& path) {
  const std::string where = "--token-file " + path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)  // follows a Secret volume's symlink
    return make_error(errc::not_found, "{}: cannot read it ({})", where, std::strerror(errno));
  const unsigned mode = st.st_mode & 07777;
  if ((mode & 022) != 0)
    return make_error(errc::invalid_argument,
                      "{}: other users may change it (mode {:04o}); run chmod go-w {}", where, mode,
                      path);
  if ((mode & 004) != 0)
    log::warn("{}: every user of this host may read the cluster token (mode {:04o}); a "
              "Kubernetes Secret volume with defaultMode 0400 keeps it private",
              where, mode);
  SPINDLE_ASSIGN_OR_RETURN(auto text, read_text_file(path, "--token-file", 4096));
  return usable_token(std::move(text), where);
}

// A member started by hand on rank 0's host: rank 0 creates the file.
expected<std::string> wait_for_token_file(const std::string& path, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (!std::filesystem::exists(path) && std::chrono::steady_clock::now() < deadline &&
         !stop_signal_pending())
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return token_file(path, "cluster token file", false);
}

}  // namespace

expected<std::optional<std::string>> handed_cluster_token(const std::string& file,
                                                          const char* env) {
  std::optional<std::string> from_env, from_file;
  if (env) {
    SPINDLE_ASSIGN_OR_RETURN(from_env, usable_token(env, kClusterTokenEnv));
  }
  if (!file.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(from_file, token_from_file(file));
  }
  if (from_env && from_file && *from_env != *from_file)
    return make_error(errc::invalid_argument,
                      "--token-file {} and {} hold different cluster tokens: give one", file,
                      kClusterTokenEnv);
  return from_file ? from_file : from_env;
}

expected<std::string> cluster_token(const std::string& file, const std::string& toml_token_file,
                                    bool create, int wait_s) {
  SPINDLE_ASSIGN_OR_RETURN(auto handed, handed_cluster_token(file, std::getenv(kClusterTokenEnv)));
  if (handed) return *handed;
  if (create) return token_file(toml_token_file, "cluster token file", true);
  return wait_for_token_file(toml_token_file, wait_s);
}

}  // namespace spindle::runtime
