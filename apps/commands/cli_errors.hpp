// Command-line parse errors in the house format: "spindle: error: ..." on
// stderr and exit code 1 (CLI11's own format used exit codes 104-106 and no
// prefix), with the nearest flag or subcommand suggested for a misspelling.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace spindle::apps {

/// Levenshtein distance, for suggestions.
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The message for parse error `e` on `app` (with argv for the suggestion):
/// CLI11's text plus "did you mean '--dataset'?" when a given flag or word is
/// within 2 edits of a known one.
std::string describe_parse_error(const CLI::App& app, const CLI::ParseError& e, int argc,
                                 char** argv);

}  // namespace spindle::apps
