#include "apps/commands/cli_errors.hpp"

#include <algorithm>
#include <vector>

namespace spindle::apps {
namespace {

// The deepest subcommand the words on the command line name.
const CLI::App* deepest(const CLI::App& app, int argc, char** argv) {
  const CLI::App* at = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string w = argv[i];
    for (const CLI::App* sub : at->get_subcommands([](const CLI::App*) { return true; }))
      if (sub->get_name() == w) {
        at = sub;
        break;
      }
  }
  return at;
}

std::vector<std::string> known_words(const CLI::App& at) {
  std::vector<std::string> out;
  for (const CLI::Option* o : at.get_options())
    for (const auto& n : o->get_lnames()) out.push_back("--" + n);
  for (const CLI::App* sub : at.get_subcommands([](const CLI::App*) { return true; }))
    out.push_back(sub->get_name());
  return out;
}

std::string nearest(const std::string& given, const std::vector<std::string>& known) {
  std::string best;
  std::size_t best_d = 3;  // at most 2 edits
  for (const auto& k : known) {
    const std::size_t d = edit_distance(given, k);
    if (d < best_d) best_d = d, best = k;
  }
  return best;
}

}  // namespace

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string describe_parse_error(const CLI::App& app, const CLI::ParseError& e, int argc,
                                 char** argv) {
  std::string msg = e.what();
  const CLI::App* at = deepest(app, argc, argv);
  const auto known = known_words(*at);
  for (int i = 1; i < argc; ++i) {
    std::string w = argv[i];
    if (w.rfind("--", 0) == 0)
      w = w.substr(0, w.find('='));
    else if (!w.empty() && w[0] == '-')
      continue;
    if (std::find(known.begin(), known.end(), w) != known.end()) continue;
    const bool extra = msg.find("were not expected") != std::string::npos;
    if (const std::string s = nearest(w, known); extra && !s.empty() && w.rfind("--", 0) == 0)
      return "'" + w + "' is not a flag here (did you mean '" + s + "'?)";
    if (const std::string s = nearest(w, known); !s.empty() && msg.find(w) != std::string::npos)
      return msg + " (did you mean '" + s + "'?)";
    if (w.rfind("--", 0) == 0) {  // an unknown flag CLI11 reported as a missing required one
      if (const std::string s = nearest(w, known); !s.empty())
        return msg + "; '" + w + "' is not a flag here (did you mean '" + s + "'?)";
    }
  }
  if (at == &app && msg.find("subcommand is required") != std::string::npos && argc > 1) {
    if (const std::string s = nearest(argv[1], known); !s.empty())
      return "unknown command '" + std::string(argv[1]) + "' (did you mean '" + s + "'?)";
    return "unknown command '" + std::string(argv[1]) + "' (see spindle --help)";
  }
  return msg;
}

}  // namespace spindle::apps
