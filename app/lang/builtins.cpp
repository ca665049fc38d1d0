// The language's builtin functions (constructors, autograd, I/O) and tensor methods.
#include <cmath>
#include <ostream>
#include <random>

#include "app/lang/call_args.h"
#include "app/lang/extension_builtins.h"
#include "app/lang/interpreter.h"
#include "app/lang/npy.h"
#include "app/lang/onnx_builtins.h"
#include "app/lang/parser.h"
#include "app/lang/recurrent_builtins.h"
#include "core/device.h"

namespace opscope::lang {

const Value* keyword(CallArgs& a, const char* name) {
  for (auto& [k, v] : a.keyword)
    if (k == name) return &v;
  return nullptr;
}

// Rejects keywords other than `allowed`, naming the valid ones.
void check_keywords(Interpreter& in, CallArgs& a, const std::string& fn, std::initializer_list<const char*> allowed) {
  for (auto& [k, _] : a.keyword) {
    bool ok = false;
    std::vector<std::string> names;
    for (const char* n : allowed) {
      names.push_back(n);
      ok = ok || k == n;
    }
    if (!ok) {
      std::string valid;
      for (auto& n : names) valid += (valid.empty() ? "" : ", ") + n;
      std::string near = closest_name(k, names);
      in.fail(a.pos, fn + "() has no keyword argument '" + k + "'",
              (near.empty() ? "" : "did you mean '" + near + "'? ") +
                  (valid.empty() ? fn + "() takes no keyword arguments" : "valid: " + valid));
    }
  }
}

DType dtype_arg(Interpreter& in, CallArgs& a, DType def) {
  const Value* v = keyword(a, "dtype");
  if (!v || v->kind() == Value::none) return def;
  if (v->kind() != Value::string) in.fail(a.pos, "dtype must be a string such as \"float32\"");
  try {
    return parse_dtype(v->as_str());
  } catch (const Error& e) {
    in.fail(a.pos, e.what(), e.hint());
  }
}

Tensor finish(Interpreter& in, CallArgs& a, Tensor t) {
  try {  // new tensors go to the workspace's device (:device cuda)
    t = t.to(in.ws().default_device(), MemCategory::input);
  } catch (const Error& e) {
    in.fail(a.pos, e.what(), e.hint());
  }
  if (const Value* rg = keyword(a, "requires_grad"); rg && in.truthy(*rg, a.pos)) {
    try {
      t.set_requires_grad(true);
    } catch (const Error& e) {
      in.fail(a.pos, e.what(), e.hint());
    }
  }
  return t;
}

void need_args(Interpreter& in, CallArgs& a, const std::string& fn, size_t lo, size_t hi) {
  size_t n = a.positional.size();
  if (n < lo || n > hi)
    in.fail(a.pos, fn + "() takes " +
                       (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
                       " positional arguments, got " + std::to_string(n));
}

const Tensor& tensor_arg(Interpreter& in, CallArgs& a, size_t i, const std::string& fn) {
  if (i >= a.positional.size() || a.positional[i].kind() != Value::tensor)
    in.fail(i < a.positions.size() ? a.positions[i] : a.pos,
            fn + "() expects a tensor" +
                (i < a.positional.size() ? std::string(", got ") + kind_name(a.positional[i]) : ""));
  return a.positional[i].as_tensor();
}

namespace {

// Nested lists -> shape and flat values; checks that the nesting is rectangular.
void flatten_literal(Interpreter& in, const Value& v, size_t depth, Shape& shape, std::vector<double>& flat,
                     bool& all_int, Pos p) {
  if (depth > 32) in.fail(p, "tensor literal nested too deeply");
  if (v.kind() == Value::list || v.kind() == Value::tuple) {
    const int64_t n = static_cast<int64_t>(v.items()->size());
    if (shape.size() == depth) shape.resize(depth + 1, n);  // (push_back: a false GCC 12 -Warray-bounds)
    else if (shape[depth] != n)
      in.fail(p,
              "tensor literal is ragged: a row of length " + std::to_string(n) + " where " +
                  std::to_string(shape[depth]) + " was expected at depth " + std::to_string(depth),
              "every row must have the same length");
    for (auto& x : *v.items()) flatten_literal(in, x, depth + 1, shape, flat, all_int, p);
    if (flat.size() > kMaxLiteralItems * 16) in.fail(p, "tensor literal too large", "use zeros, arange or load");
    return;
  }
  if (depth != shape.size())
    in.fail(p, "tensor literal is ragged: a number where a list was expected", "every row must have the same length");
  if (v.kind() == Value::tensor) {
    if (v.as_tensor().numel() != 1) in.fail(p, "a tensor inside a tensor literal must have one element");
    flat.push_back(v.as_tensor().item());
    all_int = all_int && v.as_tensor().dtype() == DType::i64;
    return;
  }
  if (!v.is_number()) in.fail(p, std::string("a tensor literal holds numbers, got ") + kind_name(v));
  all_int = all_int && v.kind() != Value::real;
  flat.push_back(v.number());
}

Tensor detached(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.impl()->storage;
  impl->shape = t.shape();
  impl->strides = t.strides();
  impl->offset = t.offset();
  impl->dtype = t.dtype();
  return Tensor(std::move(impl));
}

Value tensor_to_list(const Tensor& t, size_t axis, int64_t& flat) {
  if (t.dim() == 0) {
    double v = t.get(0);
    return t.dtype() == DType::i64 ? Value::Int(static_cast<int64_t>(v)) : Value::Real(v);
  }
  std::vector<Value> items;
  for (int64_t i = 0; i < t.shape()[axis]; ++i) {
    if (axis + 1 == t.shape().size()) {
      double v = t.get(flat++);
      items.push_back(t.dtype() == DType::i64 ? Value::Int(static_cast<int64_t>(v)) : Value::Real(v));
    } else {
      items.push_back(tensor_to_list(t, axis + 1, flat));
    }
  }
  return Value::List(std::move(items));
}

Value number_of(const Tensor& t, Interpreter& in, Pos p) {
  if (t.numel() != 1)
    in.fail(p, "item() needs a tensor with one element, got shape " + shape_str(t.shape()),
            "index it first (x[0]) or reduce it (x.sum())");
  double v = t.item();
  return t.dtype() == DType::i64 ? Value::Int(static_cast<int64_t>(v)) : Value::Real(v);
}

void run_backward(Interpreter& in, CallArgs& a, const Tensor& y) {
  check_keywords(in, a, "backward", {"grad", "retain_graph", "step"});
  Tensor g;
  if (const Value* gv = keyword(a, "grad"); gv && gv->kind() != Value::none)
    g = in.to_tensor(*gv, a.pos, y.dtype(), true);
  if (a.positional.size() > 1) g = in.to_tensor(a.positional[1], a.positions[1], y.dtype(), true);
  bool retain = false;
  if (const Value* r = keyword(a, "retain_graph")) retain = in.truthy(*r, a.pos);
  bool step = false;
  if (const Value* s = keyword(a, "step")) step = in.truthy(*s, a.pos);
  try {
    if (!step) {
      in.ws().backward(y, g, retain);
      return;
    }
    if (in.pending_pass() && !in.pending_pass()->done())
      in.fail(a.pos, "a stepped backward pass is still running", "finish it with :run (or :step) first");
    // If the statement fails, the pass it made goes and the one before comes back.
    in.start_pending_pass(in.ws().build_backward(y, g, retain));
    in.out() << "backward pass ready: " << in.pending_pass()->size() << " steps (:step, :step 5, :step bwd, :run)\n";
  } catch (const LangError&) {
    throw;
  } catch (const Error& e) {
    in.fail(a.pos, e.what(), e.hint());
  }
}

// The text of the call at `p` ("param(randn(16, 32) * 0.1)"): from the name to its closing
// parenthesis on that line, or the rest of the line.
std::string call_text(const Interpreter& in, Pos p) {
  if (!in.source()) return {};
  const std::string& text = in.source()->text;
  size_t at = 0;
  for (int line = 1; line < p.line; ++line) {
    at = text.find('\n', at);
    if (at == std::string::npos) return {};
    ++at;
  }
  const size_t begin = at + static_cast<size_t>(std::max(0, p.col - 1));
  if (begin >= text.size()) return {};
  int depth = 0;
  for (size_t i = begin; i < text.size() && text[i] != '\n'; ++i) {
    depth += text[i] == '(';
    if (text[i] == ')' && --depth == 0) return text.substr(begin, i + 1 - begin);
  }
  const size_t end = text.find('\n', begin);
  return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

MemCategory category_arg(Interpreter& in, CallArgs& a, const char* fn) {
  if (a.positional.empty() || a.positional[0].kind() == Value::none) return MemCategory::temporary;  // unused
  if (a.positional[0].kind() != Value::string) in.fail(a.pos, std::string(fn) + "() takes a category name");
  try {
    return parse_category(a.positional[0].as_str());
  } catch (const Error& e) {
    in.fail(a.positions[0], e.what(), e.hint());
  }
}

}  // namespace

namespace {

// tensor, zeros, ones, full, arange, randn, rand, eye, seed, param
void install_tensor_factories(BuiltinTable& B) {
  auto add = [&B](auto&&... args) { B.add(std::forward<decltype(args)>(args)...); };
  add("tensor", "tensor(data, dtype=None, requires_grad=False)",
      "a tensor from nested lists: int64 if every number is an integer, else float32",
      [](Interpreter& in, CallArgs& a) {
        check_keywords(in, a, "tensor", {"dtype", "requires_grad"});
        need_args(in, a, "tensor", 1, 1);
        const Value& v = a.positional[0];
        if (v.kind() == Value::tensor)
          return Value::Tensor_(
              finish(in, a, v.as_tensor().cast(dtype_arg(in, a, v.as_tensor().dtype()), MemCategory::input)));
        Shape shape;
        std::vector<double> flat;
        bool all_int = true;
        flatten_literal(in, v, 0, shape, flat, all_int, a.positions[0]);
        DType dt = dtype_arg(in, a, all_int ? DType::i64 : DType::f32);
        return Value::Tensor_(finish(in, a, Tensor::from_vector<double>(flat, shape, dt, MemCategory::input)));
      });
  auto filled = [&](const char* name, double value) {
    add(name, std::string(name) + "(*shape, dtype=\"float32\", requires_grad=False)",
        std::string("a tensor of ") + (value == 0 ? "zeros" : "ones"), [name, value](Interpreter& in, CallArgs& a) {
          check_keywords(in, a, name, {"dtype", "requires_grad"});
          Shape s = in.to_shape(a.positional, a.pos);
          try {
            return Value::Tensor_(
                finish(in, a, Tensor::full(s, value, dtype_arg(in, a, DType::f32), MemCategory::input)));
          } catch (const LangError&) {
            throw;
          } catch (const Error& e) {
            in.fail(a.pos, e.what(), e.hint());
          }
        });
  };
  filled("zeros", 0);
  filled("ones", 1);
  add("full", "full(shape, value, dtype=\"float32\", requires_grad=False)", "a tensor filled with value",
      [](Interpreter& in, CallArgs& a) {
        check_keywords(in, a, "full", {"dtype", "requires_grad"});
        need_args(in, a, "full", 2, 2);
        Shape s = in.to_shape({a.positional[0]}, a.pos);
        if (!a.positional[1].is_number()) in.fail(a.positions[1], "full() needs a number as its value");
        DType def = a.positional[1].kind() == Value::real ? DType::f32 : DType::f32;
        return Value::Tensor_(
            finish(in, a, Tensor::full(s, a.positional[1].number(), dtype_arg(in, a, def), MemCategory::input)));
      });
  add("arange", "arange(stop) or arange(start, stop, step=1, dtype=None)",
      "evenly spaced values in [start, stop): int64 for integers, float32 otherwise", [](Interpreter& in, CallArgs& a) {
        check_keywords(in, a, "arange", {"dtype", "requires_grad"});
        need_args(in, a, "arange", 1, 3);
        bool ints = true;
        for (auto& v : a.positional) {
          if (!v.is_number()) in.fail(a.pos, "arange() takes numbers");
          ints = ints && v.kind() != Value::real;
        }
        double start = 0, stop, step = 1;
        if (a.positional.size() == 1) stop = a.positional[0].number();
        else {
          start = a.positional[0].number();
          stop = a.positional[1].number();
          if (a.positional.size() == 3) step = a.positional[2].number();
        }
        if (step == 0) in.fail(a.pos, "arange() step must not be zero");
        double count = std::ceil((stop - start) / step);
        if (count > 1e9)
          in.fail(a.pos, "arange() would make " + std::to_string(static_cast<int64_t>(count)) + " elements");
        int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
        std::vector<double> v(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) v[i] = start + static_cast<double>(i) * step;
        return Value::Tensor_(
            finish(in, a,
                   Tensor::from_vector<double>(v, {n}, dtype_arg(in, a, ints ? DType::i64 : DType::f32),
                                               MemCategory::input)));
      });
  auto random = [&](const char* name, bool normal) {
    add(name, std::string(name) + "(*shape, dtype=\"float32\", requires_grad=False)",
        normal ? "standard normal samples (reproducible: seed(n))"
               : "uniform samples in [0, 1) (reproducible: seed(n))",
        [name, normal](Interpreter& in, CallArgs& a) {
          check_keywords(in, a, name, {"dtype", "requires_grad"});
          Shape s = in.to_shape(a.positional, a.pos);
          DType dt = dtype_arg(in, a, DType::f32);
          if (!is_floating(dt)) in.fail(a.pos, std::string(name) + "() makes floating-point tensors");
          Tensor t;
          try {
            t = Tensor::empty(s, DType::f64, MemCategory::input);
          } catch (const Error& e) {
            in.fail(a.pos, e.what(), e.hint());
          }
          std::normal_distribution<double> nd(0, 1);
          std::uniform_real_distribution<double> ud(0, 1);
          double* p = t.data<double>();
          for (int64_t i = 0; i < t.numel(); ++i) p[i] = normal ? nd(in.rng()) : ud(in.rng());
          return Value::Tensor_(finish(in, a, dt == DType::f64 ? t : t.cast(dt, MemCategory::input)));
        });
  };
  random("randn", true);
  random("rand", false);
  add("eye", "eye(n, m=n, dtype=\"float32\")", "the identity matrix", [](Interpreter& in, CallArgs& a) {
    check_keywords(in, a, "eye", {"dtype", "requires_grad"});
    need_args(in, a, "eye", 1, 2);
    Shape s =
        in.to_shape(a.positional.size() == 1 ? std::vector<Value>{a.positional[0], a.positional[0]} : a.positional,
                    a.pos);
    Tensor t = Tensor::zeros(s, DType::f64, MemCategory::input);
    for (int64_t i = 0; i < std::min(s[0], s[1]); ++i) t.data<double>()[i * s[1] + i] = 1;
    return Value::Tensor_(finish(in, a, t.cast(dtype_arg(in, a, DType::f32), MemCategory::input)));
  });
  add("seed", "seed(n)", "seeds randn/rand so runs are reproducible", [](Interpreter& in, CallArgs& a) {
    need_args(in, a, "seed", 1, 1);
    if (a.positional[0].kind() != Value::integer) in.fail(a.pos, "seed() takes an integer");
    in.rng().seed(static_cast<uint64_t>(a.positional[0].as_int()));
    return Value::None();
  });
  add("param", "param(tensor) or param(*shape)",
      "a parameter (requires_grad=True); from a shape: normal samples scaled by 1/sqrt(last dimension)",
      [](Interpreter& in, CallArgs& a) {
        check_keywords(in, a, "param", {"dtype"});
        Tensor t;
        int initialised_from = -1;
        if (a.positional.size() == 1 && a.positional[0].kind() == Value::tensor) {
          t = a.positional[0].as_tensor();
          if (t.impl()->from_op) initialised_from = t.impl()->value_id;
          if (t.is_symbolic()) {  // static mode: the initial value is computed now
            try {
              t = evaluate_constant(in, t);
            } catch (const Error& e) {
              in.fail(a.positions[0], e.what(), e.hint());
            }
          } else if (t.impl()->from_op) {  // param(randn(...) * 0.05): a new leaf over the same data
            auto leaf = std::make_shared<TensorImpl>(*t.impl());
            leaf->from_op = false;
            leaf->value_id = -1;
            leaf->grad = nullptr;
            t = Tensor(leaf);
          }
        } else {
          Shape s = in.to_shape(a.positional, a.pos);
          t = Tensor::empty(s, DType::f64, MemCategory::input);
          std::normal_distribution<double> nd(0, 1);
          const double scale = s.empty() || s.back() == 0 ? 1.0 : 1.0 / std::sqrt(static_cast<double>(s.back()));
          for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = nd(in.rng()) * scale;
          t = t.cast(dtype_arg(in, a, DType::f32), MemCategory::input);
        }
        try {
          if (t.device() != in.ws().default_device()) t = t.to(in.ws().default_device(), MemCategory::input);
          t.set_requires_grad(true);
        } catch (const Error& e) {
          in.fail(a.pos, e.what(), e.hint());
        }
        // The parameter's value remembers how it was made: its inspector shows the call, and
        // the figure folds the nodes that computed its initial value into it.
        ValueInfo& v = in.ws().graph().value(in.ws().value_of(t));
        v.initialised_from = initialised_from;
        v.origin = call_text(in, a.pos);
        v.origin_line = a.pos.line;
        return Value::Tensor_(t);
      });
}

// backward, grad, zero_grad, detach, item
void install_autograd_builtins(BuiltinTable& B) {
  auto add = [&B](auto&&... args) { B.add(std::forward<decltype(args)>(args)...); };
  add("backward", "backward(y, grad=None, retain_graph=False)",
      "appends the backward nodes of y's graph and runs them; gradients accumulate in .grad",
      [](Interpreter& in, CallArgs& a) {
        need_args(in, a, "backward", 1, 2);
        run_backward(in, a, tensor_arg(in, a, 0, "backward"));
        return Value::None();
      });
  add("grad", "grad(x)", "x.grad (None until a backward reaches x)", [](Interpreter& in, CallArgs& a) {
    need_args(in, a, "grad", 1, 1);
    const Tensor& t = tensor_arg(in, a, 0, "grad");
    return t.grad().defined() ? Value::Tensor_(t.grad()) : Value::None();
  });
  add("zero_grad", "zero_grad(*tensors)", "clears the .grad of each tensor (a list works too)",
      [](Interpreter& in, CallArgs& a) {
        std::vector<Tensor> ts;
        for (size_t i = 0; i < a.positional.size(); ++i) {
          const Value& v = a.positional[i];
          if (v.kind() == Value::list || v.kind() == Value::tuple) {
            for (auto& x : *v.items())
              if (x.kind() == Value::tensor) ts.push_back(x.as_tensor());
          } else {
            ts.push_back(tensor_arg(in, a, i, "zero_grad"));
          }
        }
        in.ws().zero_grad(ts);
        return Value::None();
      });
  add("detach", "detach(x)", "the same data as a new leaf, outside the graph", [](Interpreter& in, CallArgs& a) {
    need_args(in, a, "detach", 1, 1);
    return Value::Tensor_(detached(tensor_arg(in, a, 0, "detach")));
  });
  add("item", "item(x)", "the number in a one-element tensor", [](Interpreter& in, CallArgs& a) {
    need_args(in, a, "item", 1, 1);
    return number_of(tensor_arg(in, a, 0, "item"), in, a.pos);
  });
}

// print, len, range, float, int, str, exit, quit
void install_python_builtins(BuiltinTable& B) {
  auto add = [&B](auto&&... args) { B.add(std::forward<decltype(args)>(args)...); };
  add("print", "print(*values, sep=\" \")", "prints values; tensors NumPy-style", [](Interpreter& in, CallArgs& a) {
    check_keywords(in, a, "print", {"sep"});
    std::string sep = " ";
    if (const Value* s = keyword(a, "sep"); s && s->kind() == Value::string) sep = s->as_str();
    std::string line;
    for (size_t i = 0; i < a.positional.size(); ++i) {
      line += (i ? sep : "") + str(a.positional[i]);
      if (a.positional[i].kind() == Value::tensor) in.show("print", a.positional[i]);
    }
    in.progress_output();  // a progress line on the terminal makes way
    in.out() << line << "\n";
    return Value::None();
  });
  add("len", "len(x)", "length of a list, string, or a tensor's first axis", [](Interpreter& in, CallArgs& a) {
    need_args(in, a, "len", 1, 1);
    const Value& v = a.positional[0];
    if (v.kind() == Value::list || v.kind() == Value::tuple) return Value::Int(static_cast<int64_t>(v.items()->size()));
    if (v.kind() == Value::string) return Value::Int(static_cast<int64_t>(v.as_str().size()));
    if (v.kind() == Value::tensor && v.as_tensor().dim() > 0) return Value::Int(v.as_tensor().size(0));
    if (v.kind() == Value::dict) return Value::Int(static_cast<int64_t>(v.as_dict()->entries.size()));
    if (v.kind() == Value::object)
      if (const int64_t n = v.as_native()->length(); n >= 0) return Value::Int(n);
    in.fail(a.pos, std::string("len() of a ") + kind_name(v));
  });
  add("range", "range(stop) or range(start, stop, step=1)", "integers for a for loop",
      [](Interpreter& in, CallArgs& a) {
        need_args(in, a, "range", 1, 3);
        std::vector<int64_t> n;
        for (size_t i = 0; i < a.positional.size(); ++i) {
          if (a.positional[i].kind() != Value::integer) in.fail(a.positions[i], "range() takes integers");
          n.push_back(a.positional[i].as_int());
        }
        int64_t start = n.size() == 1 ? 0 : n[0], stop = n.size() == 1 ? n[0] : n[1], step = n.size() == 3 ? n[2] : 1;
        if (step == 0) in.fail(a.pos, "range() step must not be zero");
        double count = std::ceil(static_cast<double>(stop - start) / static_cast<double>(step));
        if (count > static_cast<double>(kMaxIterations))
          in.fail(a.pos,
                  "range() of " + std::to_string(static_cast<int64_t>(count)) +
                      " numbers is more than the loop limit (" + std::to_string(kMaxIterations) + ")",
                  "loops here are for small teaching examples");
        std::vector<Value> out;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(Value::Int(i));
        return Value::List(std::move(out));
      });
  add("float", "float(x)", "a Python float", [](Interpreter& in, CallArgs& a) {
    need_args(in, a, "float", 1, 1);
    const Value& v = a.positional[0];
    if (v.is_number()) return Value::Real(v.number());
    if (v.kind() == Value::tensor) return Value::Real(number_of(v.as_tensor(), in, a.pos).number());
    if (v.kind() == Value::string) {
      try {
        return Value::Real(std::stod(v.as_str()));
      } catch (...) {
        in.fail(a.pos, "float() cannot parse '" + v.as_str() + "'");
      }
    }
    in.fail(a.pos, std::string("float() of a ") + kind_name(v));
  });
  add("int", "int(x)", "a Python int (truncates)", [](Interpreter& in, CallArgs& a) {
    need_args(in, a, "int", 1, 1);
    const Value& v = a.positional[0];
    if (v.is_number() || v.kind() == Value::tensor) {
      double d = v.kind() == Value::tensor ? number_of(v.as_tensor(), in, a.pos).number() : v.number();
      if (!std::isfinite(d) || std::fabs(d) > 9.2e18) in.fail(a.pos, "int() of a value out of range");
      return Value::Int(static_cast<int64_t>(d));
    }
    in.fail(a.pos, std::string("int() of a ") + kind_name(v));
  });
  add("str", "str(x)", "text of a value", [](Interpreter& in, CallArgs& a) {
    need_args(in, a, "str", 1, 1);
    return Value::Str(str(a.positional[0]));
  });
  for (const char* name : {"exit", "quit"})
    add(name, std::string(name) + "()", "leave the REPL (also :quit or Ctrl-D)", [](Interpreter& in, CallArgs&) {
      in.request_quit();
      return Value::None();
    });
}

// live_bytes, peak_bytes, reset_peak, flops, step_count: the tracker's and executor's real numbers
void install_measurement_builtins(BuiltinTable& B) {
  auto add = [&B](auto&&... args) { B.add(std::forward<decltype(args)>(args)...); };
  add("live_bytes", "live_bytes(category=None)",
      "bytes held by live tensors now (one category: parameter, input, activation, saved, gradient, "
      "\"optimizer state\", workspace, temporary)",
      [](Interpreter& in, CallArgs& a) {
        need_args(in, a, "live_bytes", 0, 1);
        auto& tr = in.ws().tracker();
        if (a.positional.empty() || a.positional[0].kind() == Value::none) return Value::Int(tr.live_total());
        return Value::Int(tr.live(category_arg(in, a, "live_bytes")));
      });
  add("peak_bytes", "peak_bytes(category=None)", "the highest live bytes since the start or reset_peak()",
      [](Interpreter& in, CallArgs& a) {
        need_args(in, a, "peak_bytes", 0, 1);
        auto& tr = in.ws().tracker();
        if (a.positional.empty() || a.positional[0].kind() == Value::none) return Value::Int(tr.peak_total());
        return Value::Int(tr.peak(category_arg(in, a, "peak_bytes")));
      });
  add("reset_peak", "reset_peak()", "start measuring peaks from now", [](Interpreter& in, CallArgs& a) {
    need_args(in, a, "reset_peak", 0, 0);
    in.ws().tracker().reset_peak();
    return Value::None();
  });
  add("flops", "flops()", "FLOPs of every node run so far (from each op's cost model)",
      [](Interpreter& in, CallArgs& a) {
        need_args(in, a, "flops", 0, 0);
        const Graph& g = in.ws().graph();
        double total = g.drops().flops;  // nodes a loop's tape dropped did their work too
        for (const Node& n : g.nodes())
          if (n.stats.runs > 0) total += node_cost(g, n).flops * static_cast<double>(n.stats.runs);
        return Value::Real(total);
      });
  add("step_count", "step_count()", "steps the executor has run", [](Interpreter& in, CallArgs& a) {
    need_args(in, a, "step_count", 0, 0);
    return Value::Int(in.ws().executor().step_count());
  });
}

// save, load (NumPy .npy)
void install_file_builtins(BuiltinTable& B) {
  auto add = [&B](auto&&... args) { B.add(std::forward<decltype(args)>(args)...); };
  add("save", "save(path, x, dtype=None)", "writes x to a NumPy .npy file (dtype=\"bool\": a 0/1 mask as NumPy's bool)",
      [](Interpreter& in, CallArgs& a) {
        check_keywords(in, a, "save", {"dtype"});
        need_args(in, a, "save", 2, 2);
        if (a.positional[0].kind() != Value::string)
          in.fail(a.positions[0], "save() needs a file name first: save(\"x.npy\", x)");
        bool as_bool = false;
        if (const Value* d = keyword(a, "dtype"); d && d->kind() != Value::none) {
          if (d->kind() != Value::string || d->as_str() != "bool")
            in.fail(a.pos, "save() takes dtype=\"bool\" only (a tensor keeps its own dtype otherwise)",
                    "save(\"mask.npy\", x > 0, dtype=\"bool\") writes NumPy's bool");
          as_bool = true;
        }
        const std::string path = in.resolve_path(a.positional[0].as_str(), FileMode::write, a.positions[0]);
        const Tensor& x = tensor_arg(in, a, 1, "save");
        try {
          save_npy(path, x, as_bool);
        } catch (const LangError&) {
          throw;
        } catch (const Error& e) {  // a mask with a value other than 0 or 1, a write that failed
          in.fail(a.pos, e.what(), e.hint());
        }
        return Value::None();
      });
  add("load", "load(path)", "reads a NumPy .npy file (float32, float64, int64; int32 and bool become int64)",
      [](Interpreter& in, CallArgs& a) {
        need_args(in, a, "load", 1, 1);
        if (a.positional[0].kind() != Value::string) in.fail(a.positions[0], "load() needs a file name");
        Tensor t = load_npy(in.resolve_path(a.positional[0].as_str(), FileMode::read, a.positions[0]));
        try {  // on the workspace's device, as every new tensor
          return Value::Tensor_(t.to(in.ws().default_device(), MemCategory::input));
        } catch (const Error& e) {
          in.fail(a.pos, e.what(), e.hint());
        }
      });
}

}  // namespace

// Each group of builtins is installed by its own function; a new group (in its own file)
// is one more line here.
void install_builtin_functions(Interpreter&, std::map<std::string, Builtin>& table) {
  BuiltinTable B(table);
  install_tensor_factories(B);
  install_autograd_builtins(B);
  install_python_builtins(B);
  install_measurement_builtins(B);
  install_file_builtins(B);
  install_extension_builtins(B);
  install_onnx_builtins(B);
  install_recurrent_builtins(B);
}

Value Interpreter::call_method(const Tensor& self, const std::string& name, CallArgs& a) {
  const Value self_value = Value::Tensor_(self);
  if (name == "item") return number_of(self, *this, a.pos);
  if (name == "tolist") {
    int64_t flat = 0;
    return tensor_to_list(self, 0, flat);
  }
  if (name == "detach") return Value::Tensor_(detached(self));
  if (name == "backward") {
    a.positional.insert(a.positional.begin(), self_value);
    a.positions.insert(a.positions.begin(), a.pos);
    run_backward(*this, a, self);
    return Value::None();
  }
  if (name == "numel") return Value::Int(self.numel());
  if (name == "dim") return Value::Int(self.dim());
  if (name == "size") {
    if (a.positional.empty()) return get_attr(self_value, "shape", a.pos);
    if (a.positional[0].kind() != Value::integer) fail(a.pos, "size() takes an axis");
    try {
      return Value::Int(self.size(a.positional[0].as_int()));
    } catch (const Error& e) {
      fail(a.pos, e.what(), e.hint());
    }
  }
  if (name == "float" || name == "double" || name == "long") {
    const char* dt = name == "float" ? "float32" : name == "double" ? "float64" : "int64";
    return tensor_op("cast", {self}, a.pos, {{"dtype", std::string(dt)}});
  }
  if (name == "to") {
    if (a.positional.size() != 1 || a.positional[0].kind() != Value::string)
      fail(a.pos, "to() takes a device: x.to(\"cpu\")");
    try {
      // A copy across the bus, counted by the tracker. The copy is a new leaf: gradients do not
      // flow back through .to() (move parameters before using them, as with param(x.to("cuda"))).
      Tensor moved = self.to(parse_device(a.positional[0].as_str()));
      if (moved.impl() != self.impl() && self.requires_grad()) moved.set_requires_grad(true);
      return Value::Tensor_(moved);
    } catch (const Error& e) {
      fail(a.pos, e.what(), e.hint());
    }
  }
  if (name == "reshape" || name == "view" || name == "permute") {
    std::vector<int64_t> dims;
    std::vector<Value> vals = a.positional;
    if (vals.size() == 1 && (vals[0].kind() == Value::list || vals[0].kind() == Value::tuple)) vals = *vals[0].items();
    for (auto& v : vals) {
      if (v.kind() != Value::integer) fail(a.pos, name + "() takes integers");
      dims.push_back(v.as_int());
    }
    if (name == "permute") return tensor_op("permute", {self}, a.pos, {{"dims", dims}});
    return tensor_op("reshape", {self}, a.pos, {{"shape", dims}});
  }
  refuse_forbidden(name, a.pos);  // x.softmax_backward(...) is the op by another road
  if (const OpDef* op = OpRegistry::instance().find(name)) return call_op(*op, a, &self_value);
  fail(a.pos, "a tensor has no method '" + name + "'");
}

}  // namespace opscope::lang
