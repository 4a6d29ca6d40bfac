// libFuzzer target: arbitrary bytes as the files a user hands `spindle prepare`
// and `serve`: a .npy array, a dataset's metadata.json, a SNAP or CSV edge list
// (plain and .csv features), and a safetensors weights file read the way a
// model load reads it (every tensor as float32, shapes checked). The first byte
// picks the file kind; the rest is the file, written to a per-process tmpfs
// folder (the loaders map or stream real paths). Any crash, sanitizer report or
// unbounded allocation is a bug; a clean error naming the file is the answer.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "core/npy.hpp"
#include "core/safetensors.hpp"
#include "graph/dataset.hpp"
#include "graph/loaders.hpp"

using namespace spindle;

namespace {

const std::string& work_dir() {
  static const std::string dir = [] {
    const std::string base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string d = base + "/spindle-loader-fuzz-" + std::to_string(::getpid());
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

std::string write(const std::string& name, const std::uint8_t* data, std::size_t size) {
  const std::string path = work_dir() + "/" + name;
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    if (size > 0) std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  return path;
}

void read_weights(const std::string& path) {
  auto f = safetensors_file::open(path);
  if (!f) return;
  for (const auto& [name, view] : f->tensors()) {
    (void)f->as_f32(name, view.shape);  // as a model load converts each tensor
    (void)f->as_f32(name, {2, 3});      // and with a shape it does not have
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t kind = data[0] % 6;
  ++data, --size;
  switch (kind) {
    case 0:
      if (auto a = npy_array::open(write("x.npy", data, size))) {
        (void)a->as<float>();
        (void)a->as<std::int64_t>();
      }
      break;
    case 1:
      write("metadata.json", data, size);
      (void)graph::read_metadata(work_dir());
      break;
    case 2:
      (void)graph::load_edges(write("edges.txt", data, size), graph::edge_format::snap);
      break;
    case 3:
      (void)graph::load_edges(write("edges.csv", data, size), graph::edge_format::csv);
      break;
    case 4:
      (void)graph::load_features(write("feats.csv", data, size), graph::feature_format::csv);
      (void)graph::load_features(write("feats.content", data, size), graph::feature_format::linqs);
      break;
    case 5:
      read_weights(write("weights.safetensors", data, size));
      break;
  }
  return 0;
}
