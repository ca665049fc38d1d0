// Building ONNX models in tests with libonnx-dev's protobuf classes: small graphs, and the
// damaged ones the importer must refuse. Only with ONNX (OPSCOPE_HAVE_ONNX).
#pragma once
#include <onnx/onnx_pb.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "app/onnx/onnx_proto.h"

namespace opscope::test {

// A fresh folder under the system temp directory, removed when the test ends.
struct OnnxTempDir {
  std::filesystem::path path;
  OnnxTempDir() {
    std::random_device rd;
    path =
        std::filesystem::temp_directory_path() / ("opscope_test_onnx_" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~OnnxTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct ModelBuilder {
  onnx::ModelProto m;
  explicit ModelBuilder(int64_t opset = 17) {
    m.set_ir_version(8);
    m.set_producer_name("opscope tests");
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    m.mutable_graph()->set_name("test");
  }
  onnx::GraphProto& g() { return *m.mutable_graph(); }
  // dims: a size, or -1 for a symbolic "batch"; no dims at all with has_shape = false.
  void value(onnx::ValueInfoProto* v, const std::string& name, int elem, const std::vector<int64_t>& dims,
             bool has_shape) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    if (!has_shape) return;
    auto* s = t->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = s->add_dim();
      if (d < 0) dim->set_dim_param("batch");
      else dim->set_dim_value(d);
    }
  }
  ModelBuilder& input(const std::string& name, const std::vector<int64_t>& dims, int elem = onnx::TensorProto::FLOAT,
                      bool has_shape = true) {
    value(g().add_input(), name, elem, dims, has_shape);
    return *this;
  }
  ModelBuilder& output(const std::string& name, int elem = onnx::TensorProto::FLOAT) {
    value(g().add_output(), name, elem, {}, false);
    return *this;
  }
  ModelBuilder& init(const std::string& name, const Tensor& t) {
    interop::tensor_to_proto(t, name, *g().add_initializer());
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs, const std::string& name = "") {
    auto* n = g().add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& i : ins) n->add_input(i);
    for (auto& o : outs) n->add_output(o);
    return *n;
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  std::string bytes() const { return m.SerializeAsString(); }
  std::string save(const OnnxTempDir& dir, const std::string& name) const {
    const std::string path = dir.file(name);
    write_file(path, bytes());
    return path;
  }
};

}  // namespace opscope::test
