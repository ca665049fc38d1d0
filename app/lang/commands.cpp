// The `:commands` of the REPL: one registry (later issues add :mode, :step, :lesson, :device).
#include <cstdio>
#include <ostream>
#include <sstream>

#include "app/kernel_lab.h"
#include "app/lang/interpreter.h"
#include "app/lang/user_ops.h"
#include "app/ops_listing.h"
#include "core/body.h"
#include "core/cpu_isa.h"
#include "core/describe.h"
#include "core/device.h"
#include "core/interrupt.h"
#include "core/parallel.h"

namespace opscope::lang {

namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

const char* kLanguageHelp = R"(The opscope language is Python-like:
  c = a + b                       # + - * / @ (matmul) ** and comparisons, NumPy broadcasting
  x = tensor([[1, 2], [3, 4]])    # also zeros, ones, full, arange, randn, rand, eye, param
  w = param(3, 4)                 # a parameter: requires_grad=True
  y = relu(x @ w)                 # every operator by name; also as a method: x.relu()
  y = matmul(x, w, algo="naive")  # attributes and the algorithm as keywords: softmax(x, axis=0)
  backward(y.sum()); w.grad       # gradients accumulate; zero_grad(w) clears them
  x.shape, x.T, x[0], x[:, 1:3]   # attributes, transpose, indexing and slicing
  def swish(x): return x * sigmoid(x)     # a composite op (its nodes carry its name)
  @op                             # an operator of your own: one node; save() what backward needs,
  def swish(x): ...               # then @swish.backward def swish_backward(dy, ...): return dx
  for i in range(3): ...          # loops (bounded), if/elif/else, no_grad: blocks
  while c: ... break / continue   # while loops, a if c else b, dicts {"lr": 0.1}
  class Net: def forward(self, x) # a model: Net()(x) runs forward; parameters(model)
  opt = Adam(parameters(model))   # opt.zero_grad(), opt.step(); also SGD, AdamW
  for xb, yb in batches(x, y): .. # mini-batches; fashion_mnist("train"), log("loss", l)
  save("x.npy", x); load("x.npy") # NumPy .npy files; load_idx("images-idx3-ubyte.gz")
Type :help COMMAND, :help OP or :help FUNCTION for details.)";

void cmd_help(Interpreter& in, const std::string& args, std::ostream& out) {
  const std::string topic = trim(args);
  if (topic.empty()) {
    out << kLanguageHelp << "\n\nCommands:\n";
    for (auto& [name, c] : in.commands()) {
      char line[256];
      std::snprintf(line, sizeof line, "  :%-20s %s\n", (name + (c.args.empty() ? "" : " " + c.args)).c_str(),
                    c.help.c_str());
      out << line;
    }
    return;
  }
  std::string t = topic[0] == ':' ? topic.substr(1) : topic;
  if (auto it = in.commands().find(t); it != in.commands().end()) {
    out << ":" << t << (it->second.args.empty() ? "" : " " + it->second.args) << "\n  " << it->second.help << "\n";
    return;
  }
  if (auto it = in.builtins().find(t); it != in.builtins().end()) {
    out << it->second.signature << "\n  " << it->second.doc << "\n";
    return;
  }
  if (const OpDef* op = OpRegistry::instance().find(t)) {
    out << describe_op(*op) << in.user_ops().describe(*op);
    return;
  }
  std::string near = closest_name(t, in.all_names());
  throw Error("no help for '" + t + "'", near.empty() ? "try :help" : "did you mean '" + near + "'?");
}

void cmd_vars(Interpreter& in, const std::string&, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line, "%-14s %-10s %-16s %-8s %-6s %12s\n", "name", "type", "shape", "dtype", "device",
                "bytes");
  out << line;
  for (auto& [name, v] : in.globals()) {
    if (v.kind() == Value::tensor) {
      std::snprintf(line, sizeof line, "%-14s %-10s %-16s %-8s %-6s %12s\n", name.c_str(),
                    v.as_tensor().requires_grad() && !v.as_tensor().impl()->from_op ? "parameter" : "tensor",
                    shape_str(v.as_tensor().shape()).c_str(), dtype_name(v.as_tensor().dtype()),
                    device_name(v.as_tensor().device()), bytes_str(v.as_tensor().nbytes()).c_str());
    } else {
      std::string r = repr(v);
      if (r.size() > 40) r = r.substr(0, 37) + "...";
      std::snprintf(line, sizeof line, "%-14s %-10s %s\n", name.c_str(), kind_name(v), r.c_str());
    }
    out << line;
  }
}

// One node as `:graph` lists it: "#3 fwd y[2, 3] = swish(x[2, 3])  saved 24 B".
std::string graph_line(const Graph& g, const Node& n, const std::string& id) {
  auto value_label = [&](int v) {
    const ValueInfo& vi = g.value(v);
    std::string name = vi.name.empty() ? "%" + std::to_string(v) : vi.name;
    return name + shape_str(vi.meta.shape);
  };
  std::string ins, outs;
  for (int v : n.inputs) ins += (ins.empty() ? "" : ", ") + value_label(v);
  for (int v : n.outputs) outs += (outs.empty() ? "" : ", ") + value_label(v);
  std::string line = "#" + id +
                     (n.phase == Phase::backward ? " bwd "
                      : n.phase == Phase::update ? " upd "
                                                 : " fwd ") +
                     outs + " = " + n.label() + "(" + ins + ")";
  if (!n.scope.empty()) line += "  in " + n.scope;
  if (n.forward_of >= 0) line += "  [grad of #" + std::to_string(n.forward_of) + "]";
  int64_t saved = 0;
  for (auto& s : n.saved)
    if (s.tensor.defined()) saved += s.tensor.nbytes();
  if (saved) line += "  saved " + bytes_str(saved);
  else if (n.saved_released && !n.op->saves.empty()) line += "  saved: freed";
  return line;
}

void cmd_graph(Interpreter& in, const std::string& args, std::ostream& out) {
  const Graph& g = in.ws().graph();
  const std::string a = trim(args);
  if (!a.empty()) {  // :graph N: node N and the ops of its body
    int id = -1;
    try {
      id = std::stoi(a[0] == '#' ? a.substr(1) : a);
    } catch (const std::logic_error&) {
      throw Error(":graph takes a node number", "e.g. :graph 3 shows node #3 and the ops inside it");
    }
    if (id < 0 || id >= static_cast<int>(g.num_nodes()))
      throw Error("there is no node #" + a + " (the graph has " + std::to_string(g.num_nodes()) + " nodes)",
                  ":graph lists them");
    const Node& n = g.node(id);
    out << graph_line(g, n, std::to_string(id)) << "\n";
    const auto body = node_body(g, n);
    if (!body) {
      out << "  (" << n.op->name << " is one kernel: it has no body of other ops)\n";
      return;
    }
    if (!n.op->origin.empty()) out << "  " << n.op->origin << "\n";
    out << "  its kernel runs " << body->graph.num_nodes() << " op" << (body->graph.num_nodes() == 1 ? "" : "s")
        << " (not nodes of your graph):\n";
    for (const Node& b : body->graph.nodes())
      out << "    " << graph_line(body->graph, b, std::to_string(id) + "." + std::to_string(b.id)) << "\n";
    std::string ins, outs;
    for (size_t i = 0; i < body->inputs.size(); ++i) {
      const int v = body->inputs[i];
      ins += (ins.empty() ? "" : ", ") +
             (body->graph.value(v).name.empty() ? "%" + std::to_string(v) : body->graph.value(v).name);
    }
    for (int v : body->outputs)
      outs += (outs.empty() ? "" : ", ") +
              (body->graph.value(v).name.empty() ? "%" + std::to_string(v) : body->graph.value(v).name);
    out << "  reads " << ins << "; returns " << outs << "\n";
    return;
  }
  if (g.num_nodes() == 0) {
    out << "(the graph is empty: run some operations)\n";
    return;
  }
  for (const Node& n : g.nodes()) {
    out << graph_line(g, n, std::to_string(n.id));
    if (n.body) out << "  (" << n.body->graph.num_nodes() << " ops inside: :graph " << n.id << ")";
    out << "\n";
  }
  if (g.drops().nodes) out << tape_drops_line(g, in.last_loop()) << "\n";
}

void cmd_mem(Interpreter& in, const std::string& args, std::ostream& out) {
  auto& tr = in.ws().tracker();
  std::istringstream is(args);
  std::string sub;
  is >> sub;
  if (sub == "cap") {
    double bytes = 0;
    if (!(is >> bytes) || bytes <= 0) throw Error(":mem cap needs a number of bytes", "e.g. :mem cap 1e9");
    tr.set_cap(static_cast<int64_t>(bytes));
    out << "memory cap set to " << bytes_str(tr.cap()) << "\n";
    return;
  }
  if (!sub.empty()) throw Error("unknown :mem argument '" + sub + "'", ":mem, or :mem cap BYTES");
  char line[256];
  std::snprintf(line, sizeof line, "%-20s %14s %14s\n", "category", "live", "peak");
  out << line;
  for (int c = 0; c < kNumCategories; ++c) {
    auto cat = static_cast<MemCategory>(c);
    std::snprintf(line, sizeof line, "%-20s %14s %14s\n",
                  category_name(cat) == std::string("saved") ? "saved for backward" : category_name(cat),
                  bytes_str(tr.live(cat)).c_str(), bytes_str(tr.peak(cat)).c_str());
    out << line;
  }
  std::snprintf(line, sizeof line, "%-20s %14s %14s\n", "total", bytes_str(tr.live_total()).c_str(),
                bytes_str(tr.peak_total()).c_str());
  out << line << "reserved by the allocator cache: " << bytes_str(tr.reserved()) << "; cap " << bytes_str(tr.cap())
      << "\n";
  if (total_bytes(tr.peak_on(Device::cuda)) > 0 || tr.reserved(Device::cuda) > 0) {
    out << "on cuda: live " << bytes_str(total_bytes(tr.live_on(Device::cuda))) << ", peak "
        << bytes_str(total_bytes(tr.peak_on(Device::cuda))) << ", reserved by the CUDA caching allocator "
        << bytes_str(tr.reserved(Device::cuda)) << "\n";
    const auto& up = tr.copies(Device::cpu, Device::cuda);
    const auto& down = tr.copies(Device::cuda, Device::cpu);
    out << "copies: cpu->cuda " << up.copies << " (" << bytes_str(up.bytes) << "), cuda->cpu " << down.copies << " ("
        << bytes_str(down.bytes) << ")\n";
  }
}

// One executed step as the student reads it: which node, which forward node it differentiates,
// the shapes, what was freed, and memory by category after it.
std::string format_step(const Graph& g, const StepEvent& e) {
  const Node& n = g.node(e.node);
  std::string s = "step " + std::to_string(e.step) + "  " +
                  (e.phase == Phase::backward ? "bwd"
                   : e.phase == Phase::update ? "upd"
                                              : "fwd") +
                  "  #" + std::to_string(n.id) + " ";
  std::string outs;
  for (int v : n.outputs) {
    const ValueInfo& vi = g.value(v);
    outs +=
        (outs.empty() ? "" : ", ") + (vi.name.empty() ? "%" + std::to_string(v) : vi.name) + shape_str(vi.meta.shape);
  }
  std::string ins;
  for (int v : n.inputs) {
    const ValueInfo& vi = g.value(v);
    ins += (ins.empty() ? "" : ", ") + (vi.name.empty() ? "%" + std::to_string(v) : vi.name) + shape_str(vi.meta.shape);
  }
  s += outs + " = " + n.label() + "(" + ins + ")";
  if (n.forward_of >= 0) {
    const Node& f = g.node(n.forward_of);
    std::string fname = g.node_var_name(f.id);
    s += "   [gradient of #" + std::to_string(f.id) + " " + f.op->name + (fname.empty() ? "" : " → " + fname) + "]";
  }
  for (int f : e.saved_released_of)
    s += "\n      freed the tensors saved by #" + std::to_string(f) + " " + g.node(f).op->name;
  std::string mem;
  for (int c = 0; c < kNumCategories; ++c)
    if (e.mem_after[c])
      mem += (mem.empty() ? "" : " · ") + std::string(category_name(static_cast<MemCategory>(c))) + " " +
             bytes_str(e.mem_after[c]);
  s += "\n      memory: " + (mem.empty() ? std::string("0 B") : mem) + "\n";
  return s;
}

// Runs steps of what is being stepped: a static program run or a :replay (statics->run),
// else a dynamic backward(y, step=True). count < 0: to the end; until_backward: until one
// backward step has run.
void step_pending(Interpreter& in, int64_t count, bool until_backward, std::ostream& out) {
  Executor& ex = in.ws().executor();
  StaticState& st = in.statics();
  const bool program = st.run && !st.run->done();
  if (!program && (!in.pending_pass() || in.pending_pass()->done()))
    throw Error("nothing to step",
                "backward(loss, step=True) steps a backward pass; in static mode run(loss, x=..., step=True); :replay "
                "replays the forward tape");
  const Graph& tape = in.ws().graph();
  // Steps are numbered within what is being stepped (the executor's counter is session-wide).
  int id = ex.add_listener([&](const StepEvent& e) {
    StepEvent local = e;
    local.step = static_cast<int64_t>(program ? st.run->position() : in.pending_pass()->position()) + 1;
    out << format_step(e.graph ? *e.graph : tape, local);
  });
  try {
    for (int64_t i = 0; count < 0 || i < count; ++i) {
      if (program) {
        if (st.run->done()) break;
        const bool bwd = st.run->program().graph.node(st.run->next_node()).phase == Phase::backward;
        st.run->step();
        if (until_backward && !bwd) --i;  // forward steps do not count toward :step bwd
      } else {
        if (in.pending_pass()->done()) break;
        in.pending_pass()->step();
      }
    }
  } catch (const Interrupted&) {  // between two steps: the pass stays where it is
    ex.remove_listener(id);
    const size_t left =
        program ? st.run->size() - st.run->position() : in.pending_pass()->size() - in.pending_pass()->position();
    LangError e("interrupted", 1, 1,
                "the stepped pass stopped between two steps, " + std::to_string(left) +
                    (left == 1 ? " step" : " steps") + " left: :step or :run goes on");
    e.set_interrupted();
    throw e;
  } catch (...) {
    ex.remove_listener(id);
    throw;
  }
  ex.remove_listener(id);
  if (program) {
    if (st.run->done()) {
      out << (st.run_kind == "replay"
                  ? "replay done: every forward step ran again\n"
                  : "program done" + std::string(st.run->program().grads.empty() ? "" : ": gradients are in .grad") +
                        "\n");
      st.run.reset();  // its buffers are given back
    } else {
      const size_t left = st.run->size() - st.run->position();
      out << left << (left == 1 ? " step left\n" : " steps left\n");
    }
    return;
  }
  if (in.pending_pass()->done()) {
    out << "backward pass done: gradients are in .grad\n";
    in.finish_pending_pass();
  } else {
    const size_t left = in.pending_pass()->size() - in.pending_pass()->position();
    out << left << (left == 1 ? " step left\n" : " steps left\n");
  }
}

}  // namespace

void install_repl_commands(Interpreter& in) {
  in.add_command({"step", "[N|bwd|all]",
                  "the next step(s) of a stepped backward (backward(y, step=True)), static run (run(y, step=True, "
                  "...)) or :replay; bwd: through the next backward step",
                  [](Interpreter& in, const std::string& args, std::ostream& out) {
                    const std::string a = trim(args);
                    int64_t n = 1;
                    if (a == "all") n = -1;
                    else if (!a.empty() && a != "bwd") {
                      try {
                        n = std::stoll(a);
                      } catch (const std::logic_error&) {
                        throw Error(":step takes a number, bwd or all", "e.g. :step 3");
                      }
                      if (n <= 0) throw Error(":step takes a positive number");
                    }
                    step_pending(in, n, a == "bwd", out);
                  }});
  in.add_command({"run", "", "run what is being stepped to its end",
                  [](Interpreter& in, const std::string&, std::ostream& out) { step_pending(in, -1, false, out); }});
  in.add_command(
      {"rewind", "", "back to the first step of a stepped static run or replay",
       [](Interpreter& in, const std::string&, std::ostream& out) {
         StaticState& st = in.statics();
         if (!st.run) {
           if (in.pending_pass())
             throw Error("a dynamic backward pass cannot be rewound: gradients already reached .grad",
                         "in static mode run(loss, x=..., step=True) can be rewound; :replay replays the forward tape");
           throw Error("nothing to rewind: no stepped run is open (a finished run gives its buffers back)",
                       "run(loss, x=..., step=True) in static mode, or :replay, then :step and :rewind");
         }
         st.run->rewind();
         out << "rewound: " << st.run->size() << " steps to go (parameters updated by the run are restored)\n";
       }});
  in.add_command({"replay", "", "replay the forward tape step by step from its recorded inputs (dynamic mode)",
                  [](Interpreter& in, const std::string&, std::ostream& out) {
                    auto p = replay_program(in.ws().graph());
                    // No side effects: batch_norm's running statistics are put back after each replayed step.
                    in.statics().run =
                        std::make_unique<ProgramRun>(in.ws(), p, std::unordered_map<int, Tensor>{}, true, false);
                    in.statics().run_kind = "replay";
                    out << "replaying " << p->schedule.size() << " forward steps (:step, :step N, :run, :rewind)\n";
                  }});
  in.add_command({"help", "[topic]", "the language, a command, a function or an operator", cmd_help});
  in.add_command({"ops", "", "list the operators",
                  [](Interpreter&, const std::string&, std::ostream& out) { out << app::ops_table(); }});
  in.add_command({"doc", "OP", "an operator's formula, attributes, algorithms, saved tensors and backward",
                  [](Interpreter& in, const std::string& args, std::ostream& out) {
                    const std::string name = trim(args);
                    if (name.empty()) throw Error(":doc needs an operator name", "e.g. :doc matmul");
                    const OpDef& op = OpRegistry::instance().get(name);
                    out << describe_op(op) << in.user_ops().describe(op);
                  }});
  in.add_command({"bench", "OP [sizes...]", "the kernel lab: time and check every algorithm of an op",
                  [](Interpreter&, const std::string& args, std::ostream& out) {
                    std::istringstream is(args);
                    std::string op;
                    is >> op;
                    if (op.empty()) {
                      std::string known;
                      for (auto& n : app::lab_ops()) known += (known.empty() ? "" : ", ") + n;
                      throw Error(":bench needs an operator", "e.g. :bench matmul 256; known: " + known);
                    }
                    std::vector<int64_t> sizes;
                    std::string tok;
                    while (is >> tok) {
                      try {
                        sizes.push_back(std::stoll(tok));
                      } catch (const std::logic_error&) {
                        throw Error(":bench sizes are integers, got '" + tok + "'", app::lab_usage(op));
                      }
                    }
                    out << app::lab_table(app::run_lab(op, sizes, 3));
                  }});
  in.add_command({"vars", "", "variables: name, shape, dtype, device, bytes", cmd_vars});
  in.add_command(
      {"graph", "[N]",
       "the graph as text: forward and backward nodes; :graph N shows the ops inside node N (an @op, a fused node)",
       cmd_graph});
  in.add_command({"device", "[cuda|cpu]", "where new tensors are made (no argument: the devices there are)",
                  [](Interpreter& in, const std::string& args, std::ostream& out) {
                    const std::string a = trim(args);
                    if (!a.empty()) in.ws().set_default_device(parse_device(a));
                    out << "new tensors on " << device_name(in.ws().default_device()) << "\ncpu: " << cpu_description()
                        << "\ncuda: "
                        << (device_available(Device::cuda) ? device_backend(Device::cuda)->description()
                                                           : device_missing_message(Device::cuda))
                        << "\nsim: "
                        << (device_available(Device::sim) ? device_backend(Device::sim)->description()
                                                          : device_missing_message(Device::sim))
                        << "\n";
                  }});
  in.add_command({"threads", "[N]", "threads the CPU kernels use (no argument: how many now)",
                  [](Interpreter&, const std::string& args, std::ostream& out) {
                    const std::string a = trim(args);
                    if (!a.empty()) {
                      int n = 0;
                      try {
                        size_t used = 0;
                        n = std::stoi(a, &used);
                        if (used != a.size()) throw std::invalid_argument(a);
                      } catch (const std::logic_error&) {
                        throw Error(":threads takes a number of threads, got '" + a + "'",
                                    "e.g. :threads 1 (this machine has " + std::to_string(hardware_threads()) +
                                        " cores)");
                      }
                      set_num_threads(n);
                    }
                    const int n = num_threads();
                    out << n << " thread" << (n == 1 ? "" : "s") << " (" << hardware_threads()
                        << " cores; results are the same for any number)\n";
                  }});
  in.add_command({"mem", "[cap BYTES]", "live and peak bytes by category (or set the cap)", cmd_mem});
  in.add_command({"reset", "", "forget every variable and clear the graph",
                  [](Interpreter& in, const std::string&, std::ostream& out) {
                    in.reset();
                    out << "workspace cleared\n";
                  }});
  in.add_command({"seed", "N", "seed randn/rand", [](Interpreter& in, const std::string& args, std::ostream&) {
                    try {
                      in.rng().seed(std::stoull(trim(args)));
                    } catch (const std::logic_error&) {
                      throw Error(":seed needs a non-negative integer", "e.g. :seed 0");
                    }
                  }});
  in.add_command(
      {"history", "", "what you typed this session", [](Interpreter& in, const std::string&, std::ostream& out) {
         for (size_t i = 0; i < in.history().size(); ++i) out << i + 1 << "  " << in.history()[i] << "\n";
       }});
  in.add_command({"anomaly", "on|off", "stop at the first node whose output holds NaN or Inf",
                  [](Interpreter& in, const std::string& args, std::ostream& out) {
                    const std::string a = trim(args);
                    if (a == "on" || a == "off") in.ws().set_anomaly(a == "on");
                    else if (!a.empty()) throw Error(":anomaly takes on or off");
                    out << "anomaly mode " << (in.ws().anomaly() ? "on" : "off") << "\n";
                  }});
  in.add_command({"quit", "", "leave", [](Interpreter& in, const std::string&, std::ostream&) { in.request_quit(); }});
}

void Interpreter::run_command(const std::string& line, std::ostream& out) {
  out_ = &out;
  std::string body = trim(line);
  if (!body.empty() && body[0] == ':') body = body.substr(1);
  const size_t sp = body.find_first_of(" \t");
  const std::string name = body.substr(0, sp), args = sp == std::string::npos ? "" : body.substr(sp + 1);
  auto it = commands_.find(name);
  if (it == commands_.end()) {
    std::vector<std::string> names;
    for (auto& [n, _] : commands_) names.push_back(n);
    std::string near = closest_name(name, names);
    throw LangError("unknown command ':" + name + "'", 1, 1,
                    near.empty() ? "see :help" : "did you mean ':" + near + "'?");
  }
  it->second.fn(*this, args, out);
}

}  // namespace opscope::lang
