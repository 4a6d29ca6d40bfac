#include "core/call_origin.hpp"

#include <utility>

namespace spindle {
namespace {

thread_local std::string current;  // empty: in-process

}  // namespace

scoped_call_origin::scoped_call_origin(std::string origin)
    : previous_(std::exchange(current, std::move(origin))) {}

scoped_call_origin::~scoped_call_origin() { current = std::move(previous_); }

void set_call_origin(std::string origin) { current = std::move(origin); }

const std::string& call_origin() {
  static const std::string in_process = "in-process";
  return current.empty() ? in_process : current;
}

}  // namespace spindle
