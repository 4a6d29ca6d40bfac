#include "core/npy.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "tests/support/temp_path.hpp"

namespace spindle {
namespace {

std::string read_all(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_all(const std::string& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

TEST(npy_test, round_trips_a_2d_float_array) {
  std::vector<float> v(6 * 4);
  std::iota(v.begin(), v.end(), 0.5f);
  std::string p = testing::temp_path("npy_test", "f.npy");
  auto sum = write_npy(p, dtype::f32, {6, 4}, v.data());
  ASSERT_TRUE(sum.has_value()) << sum.error().to_string();
  auto a = npy_array::open(p);
  ASSERT_TRUE(a.has_value()) << a.error().to_string();
  EXPECT_EQ(a->shape(), (std::vector<std::int64_t>{6, 4}));
  auto span = a->as<float>();
  ASSERT_TRUE(span.has_value());
  EXPECT_EQ(std::vector<float>(span->begin(), span->end()), v);
  EXPECT_EQ(*sum, checksum(v.data(), v.size() * 4));
  // numpy aligns the data start to 64 bytes.
  EXPECT_EQ(read_all(p).size() % 64, (v.size() * 4) % 64);
}

TEST(npy_test, wrong_dtype_access_names_the_file) {
  std::vector<std::int64_t> v{1, 2, 3};
  std::string p = testing::temp_path("npy_test", "i.npy");
  ASSERT_TRUE(write_npy(p, dtype::i64, {3}, v.data()).has_value());
  auto a = npy_array::open(p);
  auto bad = a->as<float>();
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("i.npy: dtype is int64, expected float32"),
            std::string::npos);
}

TEST(npy_test, rejects_truncated_and_trailing_data) {
  std::vector<std::int32_t> v(100, 7);
  std::string p = testing::temp_path("npy_test", "t.npy");
  ASSERT_TRUE(write_npy(p, dtype::i32, {100}, v.data()).has_value());
  std::string bytes = read_all(p);
  write_all(p, bytes.substr(0, bytes.size() - 4));
  auto a = npy_array::open(p);
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().code(), errc::corrupt_data);
  EXPECT_NE(a.error().message().find("truncated"), std::string::npos) << a.error().message();
  write_all(p, bytes + "xx");
  a = npy_array::open(p);
  ASSERT_FALSE(a.has_value());
  EXPECT_NE(a.error().message().find("trailing"), std::string::npos);
}

TEST(npy_test, rejects_bad_headers_with_a_reason) {
  auto parse = [](const std::string& header) {
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    bytes += header;
    return parse_npy_header(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(),
                            "x.npy");
  };
  EXPECT_TRUE(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }").has_value());
  EXPECT_EQ(parse("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }").error().code(),
            errc::unsupported);
  // Fortran order is parsed (inputs accept it); npy_array::open refuses it.
  EXPECT_TRUE(parse("{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }")->fortran);
  EXPECT_EQ(parse("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3,), }").error().code(),
            errc::corrupt_data);
  EXPECT_EQ(parse("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }").error().code(),
            errc::unsupported);
  EXPECT_EQ(parse("{'descr': '<f4', 'fortran_order': False, }").error().code(), errc::corrupt_data);
  EXPECT_EQ(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (a,), }").error().code(),
            errc::corrupt_data);
  std::string junk = "PK\x03\x04 not numpy";
  auto r =
      parse_npy_header(reinterpret_cast<const std::uint8_t*>(junk.data()), junk.size(), "x.npy");
  EXPECT_NE(r.error().message().find("bad magic"), std::string::npos);
}

TEST(npy_test, writer_refuses_to_publish_a_short_file) {
  std::string p = testing::temp_path("npy_test", "short.npy");
  std::filesystem::remove(p);
  auto w = npy_writer::create(p, dtype::f64, {10});
  ASSERT_TRUE(w.has_value());
  double x = 1;
  ASSERT_TRUE(w->write(&x, sizeof x).is_ok());
  EXPECT_FALSE(w->close().has_value());
  EXPECT_FALSE(std::filesystem::exists(p));
}

TEST(npy_test, missing_file_is_not_found) {
  auto a = npy_array::open(testing::temp_path("npy_test", "nope.npy"));
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().code(), errc::not_found);
}

}  // namespace
}  // namespace spindle
