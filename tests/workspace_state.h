// Everything a statement could change, written out as text: variables (tensor values, .grad
// values and flags included), the graph (every node and value, saved tensors), the tracker's
// live bytes and timeline, the random generator, a pending stepped pass and static mode's
// state. Two texts are equal when nothing a student could observe differs: "a failed or
// interrupted statement leaves the workspace as it was" is `state before == state after`.
#pragma once
#include <cstdio>
#include <sstream>
#include <string>

#include "app/lang/interpreter.h"
#include "app/lang/session.h"
#include "core/workspace.h"

namespace opscope::test {

inline std::string tensor_state(const Tensor& t) {
  if (!t.defined()) return "None";
  std::string s = shape_str(t.shape()) + " " + dtype_name(t.dtype()) + (t.requires_grad() ? " rg" : "");
  if (t.is_symbolic()) return s + " symbolic";
  const std::vector<double> v = t.to_vector();
  // Every value when small; else a checksum that any changed element changes.
  if (v.size() <= 256) {
    for (double x : v) {
      char buf[32];
      std::snprintf(buf, sizeof buf, " %.9g", x);
      s += buf;
    }
    return s;
  }
  double sum = 0, weighted = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    sum += v[i];
    weighted += v[i] * static_cast<double>(i % 97 + 1);
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, " sum %.12g weighted %.12g", sum, weighted);
  return s + buf;
}

inline std::string value_state(const lang::Value& v) {
  if (v.kind() == lang::Value::tensor)
    return "tensor " + tensor_state(v.as_tensor()) + " grad " + tensor_state(v.as_tensor().grad());
  if (v.kind() == lang::Value::list || v.kind() == lang::Value::tuple) {
    std::string s = v.kind() == lang::Value::list ? "[" : "(";
    for (auto& x : *v.items()) s += value_state(x) + "; ";
    return s + (v.kind() == lang::Value::list ? "]" : ")");
  }
  return lang::repr(v);
}

inline std::string workspace_state(lang::Session& session) {
  lang::Interpreter& in = session.interpreter();
  Workspace& ws = in.ws();
  std::ostringstream o;
  o << "mode " << (ws.static_mode() ? "static" : "dynamic") << " grad " << ws.grad_enabled() << "\n";
  for (auto& [name, v] : in.globals()) o << "var " << name << " = " << value_state(v) << "\n";
  const Graph& g = ws.graph();
  o << "graph " << g.node_count() << " nodes, ids < " << g.num_nodes() << "; " << g.value_count() << " values, ids < "
    << g.num_values() << "; dropped " << g.drops().nodes << " nodes, " << g.drops().values << " values, "
    << g.drops().flops << " FLOPs\n";
  for (const Node& n : g.nodes()) {
    o << "#" << n.id << " " << n.label() << " " << phase_name(n.phase) << " in";
    for (int v : n.inputs) o << " " << v;
    o << " out";
    for (int v : n.outputs) o << " " << v;
    int saved = 0;
    for (auto& s : n.saved) saved += s.tensor.defined();
    o << " saved " << saved << (n.saved_released ? " released" : "") << " of " << n.forward_of << "\n";
  }
  for (size_t k = 0; k < g.value_count(); ++k) {
    const ValueInfo& vi = g.values()[k];
    o << "%" << g.value_ids()[k] << " " << value_kind_name(vi.kind) << " " << vi.name << " " << shape_str(vi.meta.shape)
      << (vi.requires_grad ? " rg" : "") << (vi.constant.defined() ? " const" : "") << (vi.checkpoint ? " ckpt" : "")
      << (vi.tensor.expired() ? "" : " live") << "\n";
  }
  const MemoryTracker& tr = ws.tracker();
  o << "live";
  for (int c = 0; c < kNumCategories; ++c) o << " " << tr.live()[c];
  o << "\ntimeline " << tr.timeline_recorded() << "\n";
  std::ostringstream rng;
  rng << in.rng();
  o << "rng " << std::hash<std::string>()(rng.str()) << "\n";
  if (in.pending_pass()) o << "pending " << in.pending_pass()->position() << "/" << in.pending_pass()->size() << "\n";
  const lang::StaticState& st = in.statics();
  o << "static last " << (st.last ? st.last.get() : nullptr) << " run " << (st.run ? st.run.get() : nullptr);
  if (st.run) o << " at " << st.run->position();
  o << " kind " << st.run_kind << "\n";
  return o.str();
}

}  // namespace opscope::test
