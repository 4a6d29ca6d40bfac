// The one way Spindle draws a PNG: a gnuplot script run by gnuplot (Debian's
// gnuplot-nox), with every path or label handed over as a gnuplot string
// variable on the command line, so quotes in paths cannot break the script.
// Used by the latency CDF, the load sweep and the calibration plot.
#pragma once

#include <map>
#include <string>

#include "core/status.hpp"

namespace spindle {

/// Runs `script` with each of `strings` defined first as a gnuplot string
/// variable (name -> value, any characters). The script writes `png` (its
/// variable `out` is set to it); errors name gnuplot's absence or failure and
/// the PNG.
status run_gnuplot(const std::string& script, const std::string& png,
                   std::map<std::string, std::string> strings = {});

}  // namespace spindle
