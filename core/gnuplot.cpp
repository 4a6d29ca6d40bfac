#include "core/gnuplot.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/subprocess.hpp"

namespace spindle {
namespace {

// A gnuplot single-quoted string: a quote inside is written twice.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

}  // namespace

status run_gnuplot(const std::string& script, const std::string& png,
                   std::map<std::string, std::string> strings) {
  std::string gnuplot;
  for (const char* path : {"/usr/bin/gnuplot", "/usr/local/bin/gnuplot"})
    if (std::filesystem::exists(path)) gnuplot = path;
  if (gnuplot.empty())
    return make_error(errc::not_found, "gnuplot not found (apt-get install gnuplot-nox) for {}",
                      png);
  const auto file = std::filesystem::temp_directory_path() /
                    ("spindle-plot-" + std::to_string(::getpid()) + ".gp");
  {
    std::ofstream gp(file);
    gp << script;
    if (!gp) return make_error(errc::io_error, "cannot write the gnuplot script {}", file.string());
  }
  strings["out"] = png;
  std::string vars;
  for (const auto& [name, value] : strings) vars += name + "=" + quoted(value) + "; ";
  auto proc = child_process::spawn({gnuplot, "-e", vars, file.string()});
  if (!proc) return proc.error();
  const int rc = proc->wait();
  std::error_code ec;
  std::filesystem::remove(file, ec);
  if (rc != 0 || !std::filesystem::exists(png))
    return make_error(errc::io_error, "gnuplot failed (exit {}) writing {}", rc, png);
  return status::ok();
}

}  // namespace spindle
