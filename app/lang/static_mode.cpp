#include "app/lang/static_mode.h"

#include <cstdio>
#include <ostream>
#include <sstream>

#include "app/lang/call_args.h"
#include "app/lang/interpreter.h"
#include "app/lang/training.h"

namespace opscope::lang {

namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::string flops_str(double f) {
  char buf[32];
  if (f >= 1e9) std::snprintf(buf, sizeof buf, "%.2f G", f / 1e9);
  else if (f >= 1e6) std::snprintf(buf, sizeof buf, "%.2f M", f / 1e6);
  else if (f >= 1e3) std::snprintf(buf, sizeof buf, "%.1f k", f / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f ", f);
  return buf;
}

// The tensors named by compile(y) / run([a, b]): their graph values.
std::vector<int> fetch_values(Interpreter& in, const Value& v, Pos p, const char* fn) {
  std::vector<int> out;
  auto one = [&](const Value& x) {
    if (x.kind() != Value::tensor)
      in.fail(p, std::string(fn) + "() expects a tensor or a list of tensors, got " + kind_name(x));
    if (!x.as_tensor().is_symbolic() && !(x.as_tensor().impl()->from_op && x.as_tensor().impl()->value_id >= 0))
      in.fail(p,
              std::string(fn) + "(): '" +
                  (x.as_tensor().name().empty() ? std::string("this tensor") : x.as_tensor().name()) +
                  "' already has values: it was computed in dynamic mode, so there is no program to " + fn,
              "build it in static mode: :mode static (or a static: block), x = input(\"x\", shape), then y = ...");
    out.push_back(in.ws().value_of(x.as_tensor()));
  };
  if (v.kind() == Value::list || v.kind() == Value::tuple)
    for (auto& x : *v.items()) one(x);
  else one(v);
  if (out.empty()) in.fail(p, std::string(fn) + "() needs at least one tensor");
  return out;
}

RecomputePolicy parse_recompute(Interpreter& in, const Value& v, Pos p) {
  RecomputePolicy r;
  if (v.kind() == Value::none) return r;
  if (v.kind() == Value::integer || v.kind() == Value::real) {
    r.kind = RecomputePolicy::within_budget;
    r.budget = static_cast<int64_t>(v.number());
    return r;
  }
  const std::string hint =
      "recompute=\"every:2\" (keep every 2nd activation), \"marks\" (keep checkpoint(...) values) or a byte budget";
  if (v.kind() != Value::string) in.fail(p, "recompute must be a string or a number of bytes", hint);
  if (v.as_str() == "marks") {
    r.kind = RecomputePolicy::marks;
  } else if (v.as_str().rfind("every:", 0) == 0) {
    r.kind = RecomputePolicy::every_k;
    try {
      r.k = std::stoi(v.as_str().substr(6));
    } catch (const std::logic_error&) {
      in.fail(p, "recompute=\"" + v.as_str() + "\": every: needs a number", hint);
    }
    if (r.k < 1) in.fail(p, "recompute=\"" + v.as_str() + "\": k must be at least 1", hint);
  } else if (v.as_str() != "off" && v.as_str() != "none") {
    in.fail(p, "unknown recompute policy \"" + v.as_str() + "\"", hint);
  }
  return r;
}

// Feeds by placeholder name: shapes must match what input(...) declared.
std::unordered_map<int, Tensor> collect_feeds(Interpreter& in, const Program& p, CallArgs& a,
                                              const std::set<std::string>& reserved) {
  std::unordered_map<int, Tensor> feeds;
  std::map<std::string, int> by_name;
  std::vector<std::string> names;
  for (int v : p.placeholders) {
    by_name[p.graph.value(v).name] = v;
    names.push_back(p.graph.value(v).name);
  }
  for (auto& [k, val] : a.keyword) {
    if (reserved.count(k)) continue;
    auto it = by_name.find(k);
    if (it == by_name.end()) {
      std::string all;
      for (auto& n : names) all += (all.empty() ? "" : ", ") + n;
      std::string near = closest_name(k, names);
      in.fail(a.pos, "run(): the program has no input named '" + k + "'",
              near.empty() ? (all.empty() ? "this program has no inputs" : "its inputs: " + all)
                           : "did you mean '" + near + "'?");
    }
    const ValueInfo& vi = p.graph.value(it->second);
    Tensor t = in.to_tensor(val, a.pos, vi.meta.dtype, true);
    if (t.is_symbolic()) {  // a constant expression written in static mode: computed now
      try {
        t = evaluate_constant(in, t);
      } catch (const Error& e) {
        in.fail(a.pos, "run(): the value given for '" + k + "': " + e.what(), "feed a tensor with values");
      }
    }
    if (t.shape() != vi.meta.shape)
      in.fail(a.pos,
              "run(): '" + k + "' was declared " + shape_str(vi.meta.shape) + " but the value given is " +
                  shape_str(t.shape()),
              "feed a tensor of the declared shape, or declare input(\"" + k + "\", " + shape_str(t.shape()) + ")");
    if (t.dtype() != vi.meta.dtype) t = t.cast(vi.meta.dtype, MemCategory::input);
    feeds[it->second] = t;
  }
  for (int v : p.placeholders)
    if (!feeds.count(v))
      in.fail(a.pos,
              "run(): the input '" + p.graph.value(v).name + "' " + shape_str(p.graph.value(v).meta.shape) +
                  " needs a value",
              "run(..., " + p.graph.value(v).name + "=tensor)");
  return feeds;
}

Value results_value(const std::vector<Tensor>& results, bool as_list) {
  if (!as_list) return Value::Tensor_(results.at(0));
  std::vector<Value> items;
  for (auto& t : results) items.push_back(Value::Tensor_(t));
  return Value::List(std::move(items));
}

std::string summary(const Program& p) {
  size_t fused = 0, backward = 0;
  for (int id : p.schedule) {
    fused += p.graph.node(id).fused.empty() ? 0 : 1;
    backward += p.graph.node(id).phase == Phase::backward ? 1 : 0;
  }
  return std::to_string(p.schedule.size()) + " nodes (" + std::to_string(backward) + " backward, " +
         std::to_string(fused) + " fused), " + flops_str(p.flops()) + "FLOPs, " + bytes_str(p.peak_bytes()) +
         " per run; :compile shows each pass";
}

double program_info(const Program& p, const std::string& key, Interpreter& in, Pos pos) {
  if (key == "nodes") return static_cast<double>(p.schedule.size());
  if (key == "flops") return p.flops();
  if (key == "bytes_moved") return p.bytes_moved();
  if (key == "peak_bytes") return static_cast<double>(p.peak_bytes());
  if (key == "naive_bytes") return static_cast<double>(p.plan.naive_bytes);
  if (key == "buffers") return static_cast<double>(p.plan.buffer_bytes.size());
  if (key == "in_place") return static_cast<double>(p.plan.in_place.size());
  if (key == "gradients") return static_cast<double>(p.grads.size());
  if (key == "held_activations") return static_cast<double>(p.held_activation_bytes());
  if (key == "fused") {
    double n = 0;
    for (int id : p.schedule) n += p.graph.node(id).fused.empty() ? 0 : 1;
    return n;
  }
  if (key == "backward_nodes" || key == "forward_nodes") {
    double n = 0;
    for (int id : p.schedule) n += (p.graph.node(id).phase == Phase::backward) == (key == "backward_nodes") ? 1 : 0;
    return n;
  }
  in.fail(pos, "program_info(): unknown key '" + key + "'",
          "keys: nodes, forward_nodes, backward_nodes, fused, gradients, flops, bytes_moved, peak_bytes, naive_bytes, "
          "buffers, in_place, held_activations");
}

// Before compile() or run() replace the last program or the stepped run: the state before the
// statement is put back if it fails (the stepped run is set aside, as replacing it would).
void set_aside_static_state(Interpreter& in) {
  StaticState& st = in.statics();
  if (in.statement_undo().keeps(&st, StatementUndo::static_state)) {
    st.run.reset();
    return;
  }
  auto run = std::make_shared<std::unique_ptr<ProgramRun>>(std::move(st.run));
  in.on_undo(&st, StatementUndo::static_state,
             [&st, run, last = st.last, options = st.last_options, kind = st.run_kind] {
               st.run = std::move(*run);
               st.last = last;
               st.last_options = options;
               st.run_kind = kind;
             });
}

}  // namespace

std::shared_ptr<const Program> compile_for(Interpreter& in, CompileOptions opt) {
  opt.disabled = in.statics().disabled;
  auto p = compile_program(in.ws(), opt);
  in.statics().last = p;
  in.statics().last_options = opt;
  return p;
}

namespace {
Tensor evaluate(Interpreter& in, const Tensor& t, bool side_effects) {
  CompileOptions opt;
  opt.fetch = {in.ws().value_of(t)};
  opt.gradients = false;
  opt.disabled = {"plan_memory"};
  auto p = compile_program(in.ws(), opt);
  if (!p->placeholders.empty())
    throw Error("this value depends on the input '" + p->graph.value(p->placeholders[0]).name +
                    "', so it has no value before the program runs",
                "a parameter's initial value must come from constants: param(randn([784, 256]) * 0.05)");
  ProgramRun run(in.ws(), p, {}, false, side_effects);
  run.run_all();
  return run.results().at(0).clone(MemCategory::input);
}
}  // namespace

Tensor evaluate_constant(Interpreter& in, const Tensor& t) { return evaluate(in, t, true); }
Tensor evaluate_for_reading(Interpreter& in, const Tensor& t) { return evaluate(in, t, false); }

void print_compile_table(const Program& p, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line, "%-18s %-4s %6s %12s %12s %12s %9s\n", "pass", "on", "nodes", "FLOPs", "bytes moved",
                "memory", "time");
  out << line;
  for (auto& r : p.reports) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.2f ms", r.ms);
    std::snprintf(line, sizeof line, "%-18s %-4s %6zu %12s %12s %12s %9s\n", r.pass.c_str(), r.enabled ? "yes" : "off",
                  r.nodes, flops_str(r.flops).c_str(), bytes_str(static_cast<int64_t>(r.bytes_moved)).c_str(),
                  bytes_str(r.peak_bytes).c_str(), r.pass == "traced" ? "" : ms);
    out << line;
    size_t shown = 0;
    for (auto& c : r.changes) {
      if (++shown > 6) {
        out << "    ... and " << r.changes.size() - 6 << " more\n";
        break;
      }
      out << "    " << c << "\n";
    }
  }
  out << "memory: what one run allocates for values (one buffer per value until plan_memory; parameters and inputs not "
         "counted)\n";
}

void install_static_builtins(Interpreter&, std::map<std::string, Builtin>& B) {
  auto add = [&](std::string name, std::string sig, std::string doc, std::function<Value(Interpreter&, CallArgs&)> fn) {
    B[name] = Builtin{name, std::move(sig), std::move(doc), std::move(fn)};
  };
  add("input", "input(name, shape, dtype=\"float32\")",
      "static mode: a placeholder fed when the program runs (run(y, name=tensor))", [](Interpreter& in, CallArgs& a) {
        check_keywords(in, a, "input", {"dtype"});
        need_args(in, a, "input", 2, 2);
        if (!in.ws().static_mode())
          in.fail(a.pos, "input() declares a placeholder of static mode; in dynamic mode every tensor has values",
                  "switch with :mode static (or write it inside a static: block), or use randn/zeros/tensor here");
        if (a.positional[0].kind() != Value::string)
          in.fail(a.positions[0], "input(): the name must be a string", "input(\"x\", [64, 784])");
        const std::string& name = a.positional[0].as_str();
        Shape s = in.to_shape({a.positional[1]}, a.positions[1]);
        return Value::Tensor_(in.ws().placeholder(name, s, dtype_arg(in, a, DType::f32)));
      });
  add("checkpoint", "checkpoint(x)",
      "marks x as a checkpoint: compile(..., recompute=\"marks\") keeps it and recomputes the others",
      [](Interpreter& in, CallArgs& a) {
        need_args(in, a, "checkpoint", 1, 1);
        const Tensor& t = tensor_arg(in, a, 0, "checkpoint");
        if (t.is_symbolic()) {
          const int v = in.ws().value_of(t);
          ValueInfo& vi = in.ws().graph().value(v);
          in.on_undo(t.impl(), StatementUndo::checkpoint_mark, t.impl_ptr(), [&in, v, before = vi.checkpoint] {
            if (ValueInfo* info = in.ws().graph().find_value(v)) info->checkpoint = before;
          });
          vi.checkpoint = true;
        }
        return a.positional[0];
      });
  add("compile", "compile(y, grad=True, wrt=None, lr=None, optimizer=None, recompute=None)",
      "static mode: compile the program computing y (a loss or a list); grad adds the backward graph, lr (SGD) or "
      "optimizer (SGD, Adam, AdamW) a training step with its updates in place",
      [](Interpreter& in, CallArgs& a) {
        check_keywords(in, a, "compile", {"grad", "wrt", "lr", "optimizer", "recompute"});
        need_args(in, a, "compile", 1, 1);
        CompileOptions opt;
        opt.fetch = fetch_values(in, a.positional[0], a.positions[0], "compile");
        if (const Value* g = keyword(a, "grad")) opt.gradients = in.truthy(*g, a.pos);
        if (const Value* w = keyword(a, "wrt"); w && w->kind() != Value::none) {
          std::vector<Value> items =
              w->kind() == Value::list || w->kind() == Value::tuple ? *w->items() : std::vector<Value>{*w};
          for (auto& x : items) {
            if (x.kind() != Value::tensor) in.fail(a.pos, "compile(): wrt= takes tensors");
            opt.wrt.push_back(in.ws().value_of(x.as_tensor()));
          }
        }
        if (const Value* lr = keyword(a, "lr"); lr && lr->kind() != Value::none) {
          if (!lr->is_number() || lr->number() <= 0)
            in.fail(a.pos, "compile(): lr must be a positive number", "lr=0.1");
          opt.sgd_lr = lr->number();
        }
        if (const Value* o = keyword(a, "optimizer"); o && o->kind() != Value::none) {
          if (opt.sgd_lr)
            in.fail(a.pos, "compile(): give lr= (plain SGD) or optimizer=, not both", "optimizer=SGD(params, lr=0.1)");
          use_optimizer(in, *o, a.pos, opt);
        }
        if (const Value* r = keyword(a, "recompute")) opt.recompute = parse_recompute(in, *r, a.pos);
        try {
          set_aside_static_state(in);
          auto p = compile_for(in, opt);
          in.out() << "compiled: " << summary(*p) << "\n";
        } catch (const Error& e) {
          in.fail(a.pos, e.what(), e.hint());
        }
        return Value::None();
      });
  add("run", "run(y, step=False, **inputs)",
      "static mode: run the compiled program of y (compiling it if needed) with its inputs fed by name; returns y's "
      "values",
      [](Interpreter& in, CallArgs& a) {
        need_args(in, a, "run", 1, 1);
        const bool as_list = a.positional[0].kind() == Value::list || a.positional[0].kind() == Value::tuple;
        std::vector<int> fetch = fetch_values(in, a.positional[0], a.positions[0], "run");
        bool step = false;
        if (const Value* s = keyword(a, "step")) step = in.truthy(*s, a.pos);
        StaticState& st = in.statics();
        set_aside_static_state(in);  // a run being stepped gives its buffers back
        std::shared_ptr<const Program> p;
        try {
          if (st.last && st.last_options.fetch == fetch) {
            p = st.last;
          } else {  // other outputs: compiled again, with the last compile's options (lr, recompute, wrt)
            CompileOptions opt = st.last ? st.last_options : CompileOptions{};
            const bool kept = st.last && (opt.sgd_lr || opt.update || opt.recompute.kind != RecomputePolicy::none ||
                                          !opt.wrt.empty());
            opt.fetch = fetch;
            p = compile_for(in, opt);
            if (kept) in.out() << "compiled again for these outputs, with the options of the last compile()\n";
          }
        } catch (const Error& e) {
          in.fail(a.pos, e.what(), e.hint());
        }
        auto feeds = collect_feeds(in, *p, a, {"step"});
        try {
          auto run = std::make_unique<ProgramRun>(in.ws(), p, std::move(feeds), step);
          if (step) {
            st.run = std::move(run);
            st.run_kind = "program";
            in.out() << "program ready: " << st.run->size() << " steps (:step, :step N, :step bwd, :run, :rewind)\n";
            return Value::None();
          }
          run->run_all();
          return results_value(run->results(), as_list);
        } catch (const Error& e) {
          in.fail(a.pos, e.what(), e.hint());
        }
      });
  add("program_info", "program_info(key)",
      "a number about the last compiled program: nodes, fused, flops, peak_bytes, naive_bytes, buffers, in_place, ...",
      [](Interpreter& in, CallArgs& a) {
        need_args(in, a, "program_info", 1, 1);
        if (!in.statics().last) in.fail(a.pos, "program_info(): nothing compiled yet", "compile(loss) first");
        if (a.positional[0].kind() != Value::string)
          in.fail(a.pos, "program_info(): the key is a string", "program_info(\"nodes\")");
        return Value::Real(program_info(*in.statics().last, a.positional[0].as_str(), in, a.pos));
      });
}

void install_static_commands(Interpreter& in) {
  in.add_command({"mode", "[static|dynamic]",
                  "static: statements build a graph that compile/run execute; dynamic: run at once",
                  [](Interpreter& in, const std::string& args, std::ostream& out) {
                    const std::string a = trim(args);
                    if (a.empty()) {
                      out << (in.ws().static_mode() ? "static" : "dynamic") << "\n";
                      return;
                    }
                    if (a != "static" && a != "dynamic")
                      throw Error(":mode takes static or dynamic", "e.g. :mode static");
                    in.ws().set_static_mode(a == "static");
                    out << (a == "static" ? "static mode: statements build the graph (shapes checked now); compile(y) "
                                            "and run(y, x=...) execute it\n"
                                          : "dynamic mode: every statement runs at once\n");
                  }});
  in.add_command({"passes", "[on|off NAME...]", "the compiler's passes, and switching them on or off",
                  [](Interpreter& in, const std::string& args, std::ostream& out) {
                    std::istringstream is(args);
                    std::string verb, name;
                    is >> verb;
                    if (!verb.empty()) {
                      if (verb != "on" && verb != "off")
                        throw Error(":passes takes on or off and pass names", "e.g. :passes off fuse_elementwise");
                      std::vector<std::string> names;
                      for (auto& p : all_passes()) names.push_back(p.name);
                      bool any = false;
                      while (is >> name) {
                        any = true;
                        if (name == "all") {  // every optimisation; autodiff is what gradients need, not one
                          for (auto& n : names)
                            if (n == "autodiff") continue;
                            else if (verb == "off") in.statics().disabled.insert(n);
                            else in.statics().disabled.erase(n);
                          continue;
                        }
                        if (std::find(names.begin(), names.end(), name) == names.end()) {
                          std::string near = closest_name(name, names);
                          for (auto& n : names)  // "fusion" → fuse_elementwise, "memory" → plan_memory
                            if (near.empty() && name.size() >= 3 &&
                                (n.find(name.substr(0, 3)) != std::string::npos || n.find(name) != std::string::npos))
                              near = n;
                          throw Error("no pass named '" + name + "'",
                                      near.empty() ? "see :passes" : "did you mean '" + near + "'?");
                        }
                        if (verb == "off") in.statics().disabled.insert(name);
                        else in.statics().disabled.erase(name);
                      }
                      if (!any) throw Error(":passes " + verb + " needs pass names", "e.g. :passes " + verb + " cse");
                    }
                    for (auto& p : all_passes()) {
                      char line[256];
                      std::snprintf(line, sizeof line, "  %-18s %-4s %s\n", p.name,
                                    in.statics().disabled.count(p.name) ? "off" : "on", p.doc);
                      out << line;
                    }
                  }});
  in.add_command(
      {"compile", "[nodes]",
       "the last compiled program, compiled again with the current passes: a table per pass (nodes: its schedule)",
       [](Interpreter& in, const std::string& args, std::ostream& out) {
         StaticState& st = in.statics();
         if (!st.last) throw Error("nothing compiled yet", "in static mode: compile(loss)");
         for (int v : st.last_options.fetch)
           if (!in.ws().graph().has_value(v))
             throw Error("the compiled program's graph was cleared by :reset", "build it again and compile(loss)");
         auto p = compile_for(in, st.last_options);
         if (trim(args) == "nodes") {
           const Graph& g = p->graph;
           for (size_t pos = 0; pos < p->schedule.size(); ++pos) {
             const Node& n = g.node(p->schedule[pos]);
             std::string outs;
             for (int v : n.outputs) {
               const ValueInfo& vi = g.value(v);
               outs += (outs.empty() ? "" : ", ") + (vi.name.empty() ? "%" + std::to_string(v) : vi.name) +
                       shape_str(vi.meta.shape);
               if (auto b = p->plan.buffer_of.find(v); b != p->plan.buffer_of.end())
                 outs += " [buffer " + std::to_string(b->second) + (p->plan.in_place.count(v) ? ", in place]" : "]");
             }
             char line[512];
             std::snprintf(line, sizeof line, "%4zu  %-8s #%-4d %s = %s\n", pos, phase_name(n.phase), n.id,
                           outs.c_str(), n.label().c_str());
             out << line;
           }
           if (p->plan.enabled) {
             out << "buffers:";
             for (size_t b = 0; b < p->plan.buffer_bytes.size(); ++b)
               out << (b ? ", " : " ") << b << ": " << bytes_str(p->plan.buffer_bytes[b]);
             out << " (" << bytes_str(p->plan.planned_bytes) << ")\n";
           }
           return;
         }
         print_compile_table(*p, out);
       }});
}

}  // namespace opscope::lang
