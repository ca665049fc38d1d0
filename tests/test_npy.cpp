#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "app/lang/npy.h"
#include "core/error.h"
#include "core/tensor.h"
#include "core/workspace.h"

using namespace opscope;
using namespace std::string_literals;
using opscope::lang::load_npy;
using opscope::lang::save_npy;
namespace fs = std::filesystem;

namespace {

// A fresh folder under the system temp directory, removed when the test ends.
struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("opscope_test_npy_" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Magic + version + little-endian length + the dict padded with spaces and '\n' so the whole
// header is a multiple of 64 bytes, as NumPy's format._wrap_header does.
std::string npy_header(int major, const std::string& dict) {
  const size_t prefix = major == 1 ? 10 : 12;
  const size_t pad = (64 - (prefix + dict.size() + 1) % 64) % 64;
  const std::string body = dict + std::string(pad, ' ') + "\n";
  std::string h = "\x93NUMPY"s;
  h += static_cast<char>(major);
  h += '\0';
  for (size_t k = 0; k < prefix - 8; ++k) h += static_cast<char>((body.size() >> (8 * k)) & 0xFF);
  return h + body;
}

// The raw little-endian bytes of some values (the test hosts are little-endian, as the code asserts).
template <class T> std::string bytes_of(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

std::string tensor_bytes(const Tensor& t) {
  Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.raw_data()), static_cast<size_t>(c.nbytes()));
}

// The Error message and hint thrown by f.
template <class F> std::pair<std::string, std::string> error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.what(), e.hint()};
  }
  FAIL("expected an opscope::Error");
  return {};
}

}  // namespace

TEST_CASE("npy round trips float32, float64 and int64 in every shape", "[repl]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  TempDir dir;
  const std::vector<Shape> shapes = {{}, {3}, {2, 3}, {2, 0, 4}};
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    for (const Shape& shape : shapes) {
      INFO(dtype_name(dtype) << " " << shape_str(shape));
      const int64_t n = shape_numel(shape);
      Tensor t = Tensor::empty(shape, dtype, MemCategory::input);
      visit_dtype(dtype, [&](auto z) {
        using T = decltype(z);
        for (int64_t i = 0; i < n; ++i)
          t.data<T>()[i] = std::is_same_v<T, int64_t> ? static_cast<T>((i - 2) * 1000000000007LL)
                                                      : static_cast<T>(0.1 * static_cast<double>(i) - 1.7);
      });
      const std::string path = dir.file("rt.npy");
      save_npy(path, t);
      const std::string bytes = read_bytes(path);
      REQUIRE(bytes.size() >= 10);
      const size_t header_len =
          static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
      CHECK((10 + header_len) % 64 == 0);
      CHECK(bytes[10 + header_len - 1] == '\n');
      CHECK(bytes.size() == 10 + header_len + static_cast<size_t>(t.nbytes()));

      Tensor u = load_npy(path);
      CHECK(u.dtype() == dtype);
      CHECK(u.shape() == shape);
      CHECK(u.is_contiguous());
      CHECK(tensor_bytes(u) == tensor_bytes(t));  // bit-exact
    }
  }
}

TEST_CASE("npy saves non-contiguous tensors in row-major order", "[repl]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  TempDir dir;
  Tensor a = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor t = a.view_transpose(0, 1);
  REQUIRE_FALSE(t.is_contiguous());
  save_npy(dir.file("t.npy"), t);
  save_npy(dir.file("c.npy"), t.contiguous());
  CHECK(read_bytes(dir.file("t.npy")) == read_bytes(dir.file("c.npy")));
  Tensor u = load_npy(dir.file("t.npy"));
  CHECK(u.shape() == Shape{3, 2});
  CHECK(u.to_vector() == std::vector<double>{0, 3, 1, 4, 2, 5});

  Tensor b = Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 2}).view_permute({2, 0, 1});
  save_npy(dir.file("p.npy"), b);
  Tensor v = load_npy(dir.file("p.npy"));
  CHECK(v.shape() == Shape{2, 2, 3});
  CHECK(v.to_vector() == b.to_vector());
}

TEST_CASE("npy float32 fixture matches NumPy's bytes exactly", "[repl]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  TempDir dir;
  // np.save(f, np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32))
  const std::string expected =
      "\x93NUMPY\x01\x00"s  // magic, version 1.0
      "\x76\x00"s  // header length 118, uint16 little-endian
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"s
      "                                                          \n"s  // 58 spaces: 10 + 118 = 128
      "\x00\x00\x80\x3f"s
      "\x00\x00\x00\x40"s
      "\x00\x00\x40\x40"s  // 1, 2, 3
      "\x00\x00\x80\x40"s
      "\x00\x00\xa0\x40"s
      "\x00\x00\xc0\x40"s;  // 4, 5, 6
  REQUIRE(expected.size() == 128 + 24);

  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  save_npy(dir.file("mine.npy"), t);
  CHECK(read_bytes(dir.file("mine.npy")) == expected);

  write_bytes(dir.file("numpy.npy"), expected);
  Tensor u = load_npy(dir.file("numpy.npy"));
  CHECK(u.dtype() == DType::f32);
  CHECK(u.shape() == Shape{2, 3});
  CHECK(u.to_vector() == std::vector<double>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("npy int64 1-d and float64 0-d fixtures", "[repl]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  TempDir dir;
  // np.save(f, np.arange(3))
  const std::string arange =
      npy_header(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }") + bytes_of<int64_t>({0, 1, 2});
  REQUIRE(arange.size() == 128 + 24);
  REQUIRE(arange.substr(8, 2) == "\x76\x00"s);  // 118
  save_npy(dir.file("a.npy"), Tensor::from_vector<int64_t>({0, 1, 2}, {3}));
  CHECK(read_bytes(dir.file("a.npy")) == arange);
  write_bytes(dir.file("a2.npy"), arange);
  Tensor a = load_npy(dir.file("a2.npy"));
  CHECK(a.dtype() == DType::i64);
  CHECK(a.shape() == Shape{3});
  CHECK(a.to_vector() == std::vector<double>{0, 1, 2});

  // np.save(f, np.array(2.5))
  const std::string scalar = npy_header(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }") +
                             "\x00\x00\x00\x00\x00\x00\x04\x40"s;  // 2.5 = 0x4004000000000000
  REQUIRE(scalar.size() == 128 + 8);
  save_npy(dir.file("s.npy"), Tensor::scalar(2.5, DType::f64));
  CHECK(read_bytes(dir.file("s.npy")) == scalar);
  write_bytes(dir.file("s2.npy"), scalar);
  Tensor s = load_npy(dir.file("s2.npy"));
  CHECK(s.dtype() == DType::f64);
  CHECK(s.shape().empty());
  CHECK(s.item() == 2.5);
}

TEST_CASE("npy reads format versions 2.0 and 3.0", "[repl]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  TempDir dir;
  const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }";
  const std::string v2 = npy_header(2, dict) + bytes_of<double>({1.5, -2, 3, 4.25});
  REQUIRE((v2.size() - 32) % 64 == 0);
  REQUIRE(v2.substr(6, 2) == "\x02\x00"s);
  write_bytes(dir.file("v2.npy"), v2);
  Tensor t = load_npy(dir.file("v2.npy"));
  CHECK(t.shape() == Shape{2, 2});
  CHECK(t.to_vector() == std::vector<double>{1.5, -2, 3, 4.25});

  write_bytes(dir.file("v3.npy"), npy_header(3, dict) + bytes_of<double>({1, 2, 3, 4}));
  CHECK(load_npy(dir.file("v3.npy")).to_vector() == std::vector<double>{1, 2, 3, 4});
}

TEST_CASE("npy fortran_order True is transposed into C order", "[repl]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  TempDir dir;
  // np.save(f, np.asfortranarray(np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)))
  const std::string f2 =
      npy_header(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }") + bytes_of<float>({1, 4, 2, 5, 3, 6});
  write_bytes(dir.file("f2.npy"), f2);
  Tensor t = load_npy(dir.file("f2.npy"));
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.is_contiguous());
  CHECK(t.to_vector() == std::vector<double>{1, 2, 3, 4, 5, 6});

  // Rank 3: element (i, j, k) = 100i + 10j + k sits at i + 2j + 6k in column-major order.
  std::vector<int64_t> col(24);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) col[static_cast<size_t>(i + 2 * j + 6 * k)] = 100 * i + 10 * j + k;
  write_bytes(dir.file("f3.npy"),
              npy_header(1, "{'descr': '<i8', 'fortran_order': True, 'shape': (2, 3, 4), }") + bytes_of(col));
  Tensor u = load_npy(dir.file("f3.npy"));
  REQUIRE(u.shape() == Shape{2, 3, 4});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) CHECK(u.get(i * 12 + j * 4 + k) == 100 * i + 10 * j + k);
  CHECK(ws.tracker().live(MemCategory::temporary) == 0);
}

TEST_CASE("npy accepts int32, '|' and '=' byte orders, and other header spellings", "[repl]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  TempDir dir;
  write_bytes(dir.file("i4.npy"), npy_header(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }") +
                                      bytes_of<int32_t>({-7, 0, 2147483647, -2147483647 - 1}));
  Tensor t = load_npy(dir.file("i4.npy"));
  CHECK(t.dtype() == DType::i64);
  REQUIRE(t.shape() == Shape{4});
  CHECK(t.data<int64_t>()[0] == -7);
  CHECK(t.data<int64_t>()[2] == 2147483647LL);
  CHECK(t.data<int64_t>()[3] == -2147483648LL);

  write_bytes(dir.file("bar.npy"),
              npy_header(1, "{'descr': '|f4', 'fortran_order': False, 'shape': (1,), }") + bytes_of<float>({0.5f}));
  CHECK(load_npy(dir.file("bar.npy")).item() == 0.5);
  // Key order, double quotes, no trailing comma and a Python 2 long are all legal Python.
  write_bytes(dir.file("eq.npy"),
              npy_header(1, R"({"shape": (2L,), "fortran_order": False, "descr": "=f8"})") + bytes_of<double>({1, 2}));
  Tensor e = load_npy(dir.file("eq.npy"));
  CHECK(e.dtype() == DType::f64);
  CHECK(e.to_vector() == std::vector<double>{1, 2});
}

// opscope has no bool dtype: NumPy's booleans load as the int64 0/1 masks that comparisons give
// and where takes, and a mask saves back as '|b1' byte for byte as np.save writes it.
TEST_CASE("npy bool arrays load as int64 masks and save back as NumPy's bool", "[repl]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  TempDir dir;
  const std::string numpy_bytes = npy_header(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }") +
                                  bytes_of<uint8_t>({1, 0, 1, 0, 0, 1});
  write_bytes(dir.file("mask.npy"), numpy_bytes);
  Tensor m = load_npy(dir.file("mask.npy"));
  CHECK(m.dtype() == DType::i64);
  REQUIRE(m.shape() == Shape{2, 3});
  CHECK(m.to_vector() == std::vector<double>{1, 0, 1, 0, 0, 1});
  Tensor a = Tensor::full({2, 3}, 5.0, DType::f32), b = Tensor::full({2, 3}, -5.0, DType::f32);
  CHECK(ws.call("where", {m, a, b}).to_vector() == std::vector<double>{5, -5, 5, -5, -5, 5});
  save_npy(dir.file("again.npy"), m, true);
  CHECK(read_bytes(dir.file("again.npy")) == numpy_bytes);
  // A comparison's mask saves as bool too; anything but 0/1 is refused, naming the element.
  save_npy(dir.file("gt.npy"), ws.call("gt", {a, b}), true);
  CHECK(load_npy(dir.file("gt.npy")).to_vector() == std::vector<double>(6, 1));
  CHECK_THROWS_WITH(save_npy(dir.file("bad.npy"), a, true),
                    Catch::Contains("element 0 is 5") && Catch::Contains("not 0 or 1"));
  // A byte other than 0 or 1 is not something NumPy writes.
  write_bytes(dir.file("two.npy"),
              npy_header(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }") + bytes_of<uint8_t>({1, 2}));
  CHECK_THROWS_WITH(load_npy(dir.file("two.npy")), Catch::Contains("element 1") && Catch::Contains("byte 2"));
}

TEST_CASE("npy errors name the file and say what is wrong", "[repl]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  TempDir dir;
  const std::string good = npy_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") +
                           bytes_of<float>({1, 2, 3, 4, 5, 6});
  const int64_t live = ws.tracker().live_total();

  SECTION("a missing file") {
    const std::string p = dir.file("missing.npy");
    auto [msg, hint] = error_of([&] { load_npy(p); });
    CHECK_THAT(msg, Catch::Contains(p) && Catch::Contains("No such file"));
  }
  SECTION("bad magic") {
    const std::string p = dir.file("magic.npy");
    write_bytes(p, "hello, world, this is text"s);
    auto [msg, hint] = error_of([&] { load_npy(p); });
    CHECK_THAT(msg, Catch::Contains(p) && Catch::Contains("magic"));
    CHECK_FALSE(hint.empty());
  }
  SECTION("an npz archive") {
    const std::string p = dir.file("arrays.npz");
    write_bytes(p, "PK\x03\x04\x14\x00\x00\x00"s);
    CHECK_THROWS_WITH(load_npy(p), Catch::Contains(p) && Catch::Contains("zip"));
  }
  SECTION("an empty file") {
    const std::string p = dir.file("empty.npy");
    write_bytes(p, "");
    CHECK_THROWS_WITH(load_npy(p), Catch::Contains(p) && Catch::Contains("magic"));
  }
  SECTION("truncated data") {
    const std::string p = dir.file("short.npy");
    write_bytes(p, good.substr(0, good.size() - 3));
    auto [msg, hint] = error_of([&] { load_npy(p); });
    CHECK_THAT(msg, Catch::Contains(p) && Catch::Contains("truncated") && Catch::Contains("21 bytes"));
    CHECK_FALSE(hint.empty());
  }
  SECTION("truncated header") {
    const std::string p = dir.file("shorthdr.npy");
    write_bytes(p, good.substr(0, 60));
    CHECK_THROWS_WITH(load_npy(p), Catch::Contains(p) && Catch::Contains("truncated"));
    write_bytes(p, good.substr(0, 9));
    CHECK_THROWS_WITH(load_npy(p), Catch::Contains(p) && Catch::Contains("truncated"));
  }
  SECTION("extra bytes after the data") {
    const std::string p = dir.file("long.npy");
    write_bytes(p, good + "xxxx");
    CHECK_THROWS_WITH(load_npy(p), Catch::Contains(p) && Catch::Contains("size mismatch"));
  }
  SECTION("a bad header") {
    const std::string p = dir.file("hdr.npy");
    write_bytes(p, npy_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ") + "xxxxxx"s);
    CHECK_THROWS_WITH(load_npy(p), Catch::Contains(p) && Catch::Contains("bad header"));
    write_bytes(p, npy_header(1, "{'descr': '<f4', 'shape': (2, 3), }") + bytes_of<float>({1, 2, 3, 4, 5, 6}));
    CHECK_THROWS_WITH(load_npy(p), Catch::Contains("fortran_order"));
    write_bytes(p, npy_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }"));
    CHECK_THROWS_WITH(load_npy(p), Catch::Contains("non-negative"));
    write_bytes(p, npy_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': " + std::string(100, '(') +
                                     std::string(100, ')') + ", }"));
    CHECK_THROWS_WITH(load_npy(p), Catch::Contains("bad header"));
  }
  SECTION("an unknown format version") {
    const std::string p = dir.file("v4.npy");
    std::string bytes = good;
    bytes[6] = 4;
    write_bytes(p, bytes);
    CHECK_THROWS_WITH(load_npy(p), Catch::Contains(p) && Catch::Contains("version 4.0"));
  }
  SECTION("big-endian data") {
    const std::string p = dir.file("be.npy");
    write_bytes(p,
                npy_header(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }") + std::string(24, '\0'));
    auto [msg, hint] = error_of([&] { load_npy(p); });
    CHECK_THAT(msg, Catch::Contains(p) && Catch::Contains("big-endian"));
    CHECK_THAT(hint, Catch::Contains("newbyteorder"));
  }
  SECTION("an unsupported dtype") {
    const std::string p = dir.file("c8.npy");
    write_bytes(p, npy_header(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }") + std::string(16, '\0'));
    auto [msg, hint] = error_of([&] { load_npy(p); });
    CHECK_THAT(msg, Catch::Contains(p) && Catch::Contains("'<c8'"));
    CHECK_THAT(hint, Catch::Contains("astype"));
    write_bytes(p, npy_header(1, "{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (2,), }") +
                       std::string(8, '\0'));
    CHECK_THROWS_WITH(load_npy(p), Catch::Contains("structured"));
  }
  SECTION("a huge shape with few bytes is refused before allocating") {
    const std::string p = dir.file("huge.npy");
    write_bytes(p, npy_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }") +
                       std::string(8, '\0'));
    CHECK_THROWS_WITH(load_npy(p), Catch::Contains(p) && Catch::Contains("truncated"));
    write_bytes(p, npy_header(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }") +
                       std::string(8, '\0'));
    CHECK_THROWS_WITH(load_npy(p), Catch::Contains(p) && Catch::Contains("too many elements"));
    CHECK(ws.tracker().live_total() == live);
    CHECK(ws.tracker().peak_total() == live);
  }
  SECTION("saving to a folder that does not exist") {
    const std::string p = dir.file("no/such/folder/x.npy");
    CHECK_THROWS_WITH(save_npy(p, Tensor::scalar(1.0)), Catch::Contains(p) && Catch::Contains("No such file"));
  }
  CHECK(ws.tracker().live_total() == live);
}
