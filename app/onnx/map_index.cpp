// ONNX indexing and scan operators as opscope ops: GatherElements, GatherND, ScatterND (Swin's
// shifted-window mask, built from constants and folded at import), TopK, CumSum, Trilu, Einsum.
#include "app/onnx/map_context.h"

namespace opscope::interop {
namespace {

using Ints = std::vector<int64_t>;

void expect_int64(NodeCtx& c, size_t i, const char* what) {
  if (c.in(i).dtype() != DType::i64)
    c.fail(std::string(what) + " must be integers, got " + dtype_name(c.in(i).dtype()));
}

std::vector<Slot> map_gather_elements(NodeCtx& c) {
  c.allow_attrs({"axis"});
  expect_int64(c, 1, "indices");
  const int64_t axis = onnx_axis(c, c.attr_int("axis", 0), c.in(0).dim());
  return one(c.call("gather_elements", {c.in(0), c.in(1)}, {{"axis", axis}}));
}

std::vector<Slot> map_gather_nd(NodeCtx& c) {
  c.allow_attrs({"batch_dims"});
  expect_int64(c, 1, "indices");
  return one(c.call("gather_nd", {c.in(0), c.in(1)}, {{"batch_dims", c.attr_int("batch_dims", 0)}}));
}

std::vector<Slot> map_scatter_nd(NodeCtx& c) {
  c.allow_attrs({"reduction"});
  expect_int64(c, 1, "indices");
  const std::string reduction = c.attr_string("reduction", "none");
  if (reduction != "none" && reduction != "add")
    c.unsupported("reduction=\"" + reduction + "\" (opscope's scatter_nd writes or adds)");
  return one(c.call("scatter_nd", {c.in(0), c.in(1), c.in(2)}, {{"reduction", reduction}}));
}

// TopK: k is an attribute before opset 10 and an input after; outputs Values and Indices.
std::vector<Slot> map_topk(NodeCtx& c) {
  const bool k_input = c.opset() >= 10;
  if (k_input) c.allow_attrs({"axis", "largest", "sorted"});
  else c.allow_attrs({"axis", "k"});
  const Tensor& x = c.in(0);
  const int64_t k = k_input ? static_cast<int64_t>(c.scalar_input(1, "K")) : c.attr_int("k", 1);
  const int64_t axis = onnx_axis(c, c.attr_int("axis", -1), x.dim());
  auto outs = c.call_multi(
      "topk", {x},
      {{"k", k}, {"axis", axis}, {"largest", c.attr_int("largest", 1) != 0}, {"sorted", c.attr_int("sorted", 1) != 0}});
  return {Slot{outs[0], false}, Slot{outs[1], false}};
}

std::vector<Slot> map_cumsum(NodeCtx& c) {
  c.allow_attrs({"exclusive", "reverse"});
  const Tensor& x = c.in(0);
  const int64_t axis = onnx_axis(c, static_cast<int64_t>(c.scalar_input(1, "axis")), x.dim());
  return one(c.call(
      "cumsum", {x},
      {{"axis", axis}, {"exclusive", c.attr_int("exclusive", 0) != 0}, {"reverse", c.attr_int("reverse", 0) != 0}}));
}

// Trilu: the upper (upper=1) or lower triangle of the last two axes, from diagonal k.
std::vector<Slot> map_trilu(NodeCtx& c) {
  c.allow_attrs({"upper"});
  const int64_t k = c.has(1) ? static_cast<int64_t>(c.scalar_input(1, "k")) : 0;
  return one(c.call(c.attr_int("upper", 1) != 0 ? "triu" : "tril", {c.in(0)}, {{"diagonal", k}}));
}

std::vector<Slot> map_einsum(NodeCtx& c) {
  c.allow_attrs({"equation"});
  if (!c.has_attr("equation")) c.fail("the equation attribute is required");
  std::vector<Tensor> ins;
  for (size_t i = 0; i < c.num_inputs(); ++i) ins.push_back(c.in(i));
  return one(c.call("einsum", ins, {{"equation", c.attr_string("equation", "")}}));
}

}  // namespace

void add_index_mappers(MapperTable& t) {
  t["GatherElements"] = map_gather_elements;
  t["GatherND"] = map_gather_nd;
  t["ScatterND"] = map_scatter_nd;
  t["TopK"] = map_topk;
  t["CumSum"] = map_cumsum;
  t["Trilu"] = map_trilu;
  t["Einsum"] = map_einsum;
}

}  // namespace opscope::interop
