#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <type_traits>

#include "core/error.h"
#include "core/graph.h"
#include "tests/helpers.h"

using namespace opscope;

TEST_CASE("shapes broadcast like NumPy and errors name both shapes", "[core]") {
  CHECK(broadcast_shapes({3, 1}, {4}, "add") == Shape{3, 4});
  CHECK(broadcast_shapes({}, {2, 2}, "add") == Shape{2, 2});
  CHECK(broadcast_shapes({5, 1, 3}, {4, 1}, "add") == Shape{5, 4, 3});
  REQUIRE_THROWS_WITH(broadcast_shapes({2, 3}, {4}, "add"), Catch::Contains("[2, 3] and [4] cannot be broadcast"));
  CHECK(normalize_axis(-1, 3, "x") == 2);
  REQUIRE_THROWS_WITH(normalize_axis(3, 3, "sum"), Catch::Contains("axis 3 is out of range"));
  CHECK(contiguous_strides({2, 3, 4}) == Strides{12, 4, 1});
  REQUIRE_THROWS_AS(shape_numel({-1, 2}), Error);
  CHECK(parse_dtype("float") == DType::f32);
  REQUIRE_THROWS_AS(parse_dtype("half"), Error);
}

// Shapes keep six extents in place and spill to the heap beyond: both sides must act as
// std::vector does (copies, moves, inserts into themselves, conversions).
// Shapes convert to std::vector<int64_t> implicitly (attributes hold them so); a node's ids do
// not, so a hot loop cannot copy them into a vector without saying so.
static_assert(std::is_convertible_v<Dims, std::vector<int64_t>>);
static_assert(!std::is_convertible_v<ValueIds, std::vector<int>>);
static_assert(std::is_constructible_v<std::vector<int>, ValueIds>);

TEST_CASE("a node's ids and frames stay in place up to four, then go to the heap", "[core]") {
  ValueIds ids{1, 2, 3, 4};
  ValueIds copy = ids;
  copy.push_back(5);  // past the inline capacity
  CHECK(copy.size() == 5);
  CHECK(std::vector<int>(copy) == std::vector<int>{1, 2, 3, 4, 5});
  CHECK(ids == ValueIds{1, 2, 3, 4});
  ValueIds moved = std::move(copy);
  CHECK(moved.size() == 5);
  CHECK(copy.empty());
  NodeFrames frames;
  for (int i = 0; i < 6; ++i) frames.push_back({NodeFrame::loop, i, i * 10});
  CHECK(frames.size() == 6);
  CHECK(frames[5] == NodeFrame{NodeFrame::loop, 5, 50});
}

TEST_CASE("Dims acts as a vector of int64 on either side of its inline capacity", "[core]") {
  for (size_t n : {size_t{0}, size_t{3}, Dims::kInline, Dims::kInline + 1, size_t{20}}) {
    std::vector<int64_t> ref;
    Dims d;
    for (size_t i = 0; i < n; ++i) {
      ref.push_back(static_cast<int64_t>(i * 7 + 1));
      d.push_back(static_cast<int64_t>(i * 7 + 1));
    }
    CHECK(std::vector<int64_t>(d) == ref);
    Dims copy = d, moved = Dims(d);
    CHECK(copy == d);
    CHECK(moved == d);
    Dims assigned{9, 9};
    assigned = d;
    CHECK(assigned == d);
    d.insert(d.begin(), d.begin(), d.end());  // a range of itself
    ref.insert(ref.begin(), ref.begin(), ref.end());
    CHECK(std::vector<int64_t>(d) == ref);
    d.insert(d.end(), 2, -1);
    ref.insert(ref.end(), 2, -1);
    d.erase(d.begin());
    ref.erase(ref.begin());
    CHECK(std::vector<int64_t>(d) == ref);
    d.resize(3, 5);
    ref.resize(3, 5);
    CHECK(Dims(ref) == d);
    Dims taken = std::move(copy);
    CHECK(taken.size() == n);
    CHECK(copy.empty());  // NOLINT: a moved-from Dims is empty, like a vector
  }
  CHECK(Dims{2, 3} < Dims{2, 4});
  CHECK(Dims(3, 1) == Dims{1, 1, 1});
}

TEST_CASE("views share storage and copy nothing", "[core]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5}, {2, 3});
  const int64_t live = ws.tracker().live_total();
  Tensor t = a.view_transpose(0, 1);
  CHECK(&t.storage() == &a.storage());
  CHECK(ws.tracker().live_total() == live);
  CHECK(t.shape() == Shape{3, 2});
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.get(1) == 3.0);  // t[0][1] = a[1][0]
  Tensor c = t.contiguous();
  CHECK(c.is_contiguous());
  CHECK(c.to_vector() == std::vector<double>{0, 3, 1, 4, 2, 5});
  Tensor s = a.view_slice(1, 1, 3, 1);
  CHECK(s.to_vector() == std::vector<double>{1, 2, 4, 5});
  Tensor e = Tensor::from_vector<float>({1, 2, 3}, {3}).view_expand({2, 3});
  CHECK(e.strides() == Strides{0, 1});
  CHECK(e.to_vector() == std::vector<double>{1, 2, 3, 1, 2, 3});
  Tensor p = Tensor::zeros({2, 3, 4}).view_permute({2, 0, 1});
  CHECK(p.shape() == Shape{4, 2, 3});
}

TEST_CASE("casts, fill and item", "[core]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = Tensor::from_vector<double>({1.5, -2.5}, {2});
  Tensor i = a.cast(DType::i64);
  CHECK(i.dtype() == DType::i64);
  CHECK(i.get(0) == 1);
  CHECK(i.get(1) == -2);
  CHECK(Tensor::scalar(3.0).item() == 3.0);
  REQUIRE_THROWS_WITH(a.item(), Catch::Contains("one element"));
  Tensor z = Tensor::full({2, 2}, 7, DType::i64);
  CHECK(z.to_vector() == std::vector<double>{7, 7, 7, 7});
}

TEST_CASE("tensors print like NumPy, truncated when large", "[core]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  CHECK(a.to_string() == "tensor([[1.0, 2.0],\n        [3.0, 4.0]], shape=[2, 2], dtype=float32)");
  Tensor b = Tensor::from_vector<float>({0.5f, -0.25f}, {2});
  CHECK(b.to_string() == "tensor([ 0.5000, -0.2500], shape=[2], dtype=float32)");
  Tensor c = Tensor::from_vector<int64_t>({1, 20, 300}, {3});
  CHECK(c.to_string() == "tensor([  1,  20, 300], shape=[3], dtype=int64)");
  Tensor big = Tensor::zeros({100, 100});
  std::string s = big.to_string();
  CHECK(s.find("...") != std::string::npos);
  CHECK(s.size() < 1000);
  CHECK(Tensor::scalar(2.0).to_string() == "tensor(2.0, shape=[], dtype=float32)");
}

TEST_CASE("only float tensors can require gradients", "[core]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor i = Tensor::zeros({2}, DType::i64);
  REQUIRE_THROWS_WITH(i.set_requires_grad(true), Catch::Contains("floating-point"));
}

// --- the primitive contract --------------------------------------------------------------------
namespace {

// The string literals of a C++ source file (comments skipped, escapes kept as written).
std::vector<std::string> string_literals(const std::string& src) {
  std::vector<std::string> out;
  for (size_t i = 0; i < src.size(); ++i) {
    if (src.compare(i, 2, "//") == 0) {
      i = src.find('\n', i);
      if (i == std::string::npos) break;
    } else if (src.compare(i, 2, "/*") == 0) {
      i = src.find("*/", i + 2);
      if (i == std::string::npos) break;
      ++i;
    } else if (src[i] == '\'') {  // a character literal such as '"'
      for (++i; i < src.size() && src[i] != '\''; ++i)
        if (src[i] == '\\') ++i;
    } else if (src[i] == '"') {
      std::string lit;
      for (++i; i < src.size() && src[i] != '"'; ++i) {
        if (src[i] == '\\') lit += src[i++];
        lit += src[i];
      }
      out.push_back(lit);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("core names no operator of ops/ beyond the primitive contract of core/op.h", "[core]") {
  std::set<std::string> attribute_names;  // "shape", "dtype": attribute keys, whatever an op is called
  for (const OpDef* op : OpRegistry::instance().all())
    for (const AttrSpec& a : op->attrs) attribute_names.insert(a.name);
  const std::set<std::string_view> contract(kPrimitiveOps.begin(), kPrimitiveOps.end());
  for (std::string_view name : contract) {
    INFO(name);
    CHECK(OpRegistry::instance().find(name) != nullptr);  // the contract names real ops
  }
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(OPSCOPE_SOURCE_DIR) / "core")) {
    std::ifstream in(entry.path());
    const std::string src((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ++files;
    for (const std::string& lit : string_literals(src)) {
      const OpDef* op = OpRegistry::instance().find(lit);
      if (!op || !op->builtin() || contract.count(lit) || attribute_names.count(lit)) continue;
      INFO(entry.path().filename().string()
           << " names the operator \"" << lit
           << "\": ask a trait of OpDef instead, or add it to kPrimitiveOps with the reason");
      CHECK(false);
    }
  }
  CHECK(files > 20);
  // The scanner itself: a list of names is seen, comments and character literals are not.
  CHECK(string_literals("f({\"add\", \"relu\"}); // \"gelu\"\nchar q = '\"'; /* \"exp\" */ g(\"a\\\"b\");") ==
        std::vector<std::string>{"add", "relu", "a\\\"b"});
}

TEST_CASE("an op with several algorithms says which is the default, on every device it has kernels", "[core]") {
  for (const OpDef* op : OpRegistry::instance().all()) {
    INFO(op->name);
    CHECK(op->find_kernel(Device::cpu, op->default_algorithm()) != nullptr);
    for (int d = 0; d < kNumDevices; ++d) {
      const Device dev = static_cast<Device>(d);
      bool any = false;
      for (auto& [key, _] : op->kernels) any = any || key.first == dev;
      if (any) CHECK(op->find_kernel(dev, default_algorithm_on(*op, dev)) != nullptr);
    }
  }
  OpDef d = OpDef::declare("test_two_algorithms", "test", "y = x", {"x"});
  d.infer = [](const InferCtx& c) { return std::vector<TensorMeta>{c.inputs[0]}; };
  d.kernel(Device::cpu, "a", [](KernelCtx&) {}).kernel(Device::cpu, "b", [](KernelCtx&) {});
  OpRegistry scratch;
  REQUIRE_THROWS_WITH(scratch.add(d), Catch::Contains("has algorithms a, b but no default_algo"));
  d.default_algo = "b";
  CHECK(scratch.add(d).default_algorithm() == "b");
}
