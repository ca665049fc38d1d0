// The @kernel compiler's expressions (kernel_compiler.h): names, arithmetic, calls, shuffles,
// atomics and array loads, each into a typed node.
#include <cmath>
#include <cstring>

#include "app/lang/interpreter.h"
#include "app/lang/kernel_compiler.h"

namespace opscope::lang::kernel::compiler {

FP Compiler::as_float(Val v) {
  if (v.ty == Ty::f) return std::move(v.f);
  return flam([a = std::move(v.i)](const Regs& r) { return double(a->ev(r)); });
}

IP Compiler::as_int(Val v, Pos p, const char* what) {
  if (v.ty == Ty::i) return std::move(v.i);
  fail(p, std::string(what) + " must be an int, not a float", "convert it: int(x)");
}

IP Compiler::truth(Val v) {
  if (v.ty == Ty::i) return std::move(v.i);
  return ilam([a = std::move(v.f)](const Regs& r) -> int64_t { return a->ev(r) != 0.0; });
}

// A compile-time integer: a literal, a global number, an int argument, arithmetic of those.
int64_t Compiler::const_int(const Expr& e) {
  switch (e.kind) {
    case Expr::integer: return e.int_value;
    case Expr::name: {
      for (size_t k = 0; k < f_.params.size(); ++k)
        if (f_.params[k] == e.text && args_[k].kind == LaunchArg::integer) return args_[k].i;
      if (const Value* v = global_number(e.text); v && v->kind() != Value::real)
        return v->kind() == Value::boolean ? v->as_bool() : v->as_int();
      break;
    }
    case Expr::binary: {
      const int64_t a = const_int(*e.items[0]), b = const_int(*e.items[1]);
      if (e.op == Operator::add) return a + b;
      if (e.op == Operator::sub) return a - b;
      if (e.op == Operator::mul) return a * b;
      if (e.op == Operator::floor_div && b != 0) return a / b;
      break;
    }
    default: break;
  }
  fail(e.pos, "a shared array's shape must be known before the launch",
       "use numbers, the script's constants or int arguments");
}

Val Compiler::name(const Expr& e) {
  if (auto it = slots_.find(e.text); it != slots_.end()) {
    const int s = it->second.second;
    if (it->second.first == Ty::f) return fval(flam([s](const Regs& r) { return r.f[s]; }));
    return ival(ilam([s](const Regs& r) { return r.i[s]; }));
  }
  if (array_named(e.text)) fail(e.pos, "'" + e.text + "' is an array: index it", e.text + "[i]");
  if (e.text == "warpSize") return ival(iconst(32));
  if (const Value* v = global_number(e.text)) {
    if (v->kind() == Value::real) return fval(fconst(v->as_real()));
    return ival(iconst(v->kind() == Value::boolean ? v->as_bool() : v->as_int()));
  }
  if (e.text == "threadIdx" || e.text == "blockIdx" || e.text == "blockDim" || e.text == "gridDim")
    fail(e.pos, e.text + " has three parts", e.text + ".x, " + e.text + ".y or " + e.text + ".z");
  if (const Value* v = in_.lookup(e.text))
    fail(e.pos,
         "'" + e.text + "' is " + std::string(kind_name(*v)) +
             ": a kernel uses numbers, its arguments and its own variables",
         v->kind() == Value::tensor ? "pass the tensor as an argument of the launch" : "");
  fail(e.pos, "name '" + e.text + "' is not defined",
       "a kernel sees its parameters, its variables and the script's numbers");
}

Val Compiler::builtin_var(const Expr& e) {
  const std::string& obj = e.items[0]->text;
  const int axis = e.text == "x" ? 0 : e.text == "y" ? 1 : e.text == "z" ? 2 : -1;
  if (axis < 0) fail(e.pos, obj + " has no part '" + e.text + "'", obj + ".x, " + obj + ".y or " + obj + ".z");
  using namespace gpusim;
  if (obj == "threadIdx")
    return ival(ilam([axis](const Regs&) -> int64_t {
      return axis == 0 ? g_thread_idx.x : axis == 1 ? g_thread_idx.y : g_thread_idx.z;
    }));
  if (obj == "blockIdx")
    return ival(ilam([axis](const Regs&) -> int64_t {
      return axis == 0 ? g_block_idx.x : axis == 1 ? g_block_idx.y : g_block_idx.z;
    }));
  if (obj == "blockDim")
    return ival(ilam([axis](const Regs&) -> int64_t {
      return axis == 0 ? g_block_dim.x : axis == 1 ? g_block_dim.y : g_block_dim.z;
    }));
  return ival(ilam([axis](const Regs&) -> int64_t {
    return axis == 0 ? g_grid_dim.x : axis == 1 ? g_grid_dim.y : g_grid_dim.z;
  }));
}

Address Compiler::address(const Array* a, std::vector<const Expr*> subs, const Pos& p) {
  if (subs.size() != 1 && int(subs.size()) != a->ndim)
    fail(p, a->name + " has " + std::to_string(a->ndim) + " axes: index it with " + std::to_string(a->ndim) +
                " indices (or one flat index)");
  for (const Expr* s : subs)
    if (s->kind == Expr::slice) fail(s->pos, "a kernel reads one element at a time: no slices", a->name + "[i]");
  Address ad;
  ad.a = a;
  for (const Expr* s : subs) ad.idx.push_back(as_int(expr(*s), s->pos, "an index"));
  ad.pos = &p;
  ad.site = site(p);
  ad.where = site_text(f_.source.get(), p);
  return ad;
}

const Array* Compiler::array_of(const Expr& e) {
  if (e.kind != Expr::name) fail(e.pos, "only arrays (tensor arguments and shared arrays) can be indexed in a kernel");
  const Array* a = array_named(e.text);
  if (!a) {
    if (slots_.count(e.text)) fail(e.pos, "'" + e.text + "' is a number, not an array");
    fail(e.pos, "'" + e.text + "' is not an array of this kernel",
         "pass the tensor as an argument of the launch, or make it with shared(shape)");
  }
  return a;
}

std::vector<const Expr*> Compiler::subscripts(const Expr& e) {
  std::vector<const Expr*> subs;
  for (size_t k = 1; k < e.items.size(); ++k) subs.push_back(e.items[k].get());
  if (subs.size() == 1 && subs[0]->kind == Expr::tuple) {
    const Expr* t = subs[0];
    subs.clear();
    for (const ExprPtr& x : t->items) subs.push_back(x.get());
  }
  return subs;
}

Val Compiler::load(const Expr& e) {
  // A.shape[k]: a constant.
  if (e.items[0]->kind == Expr::attr && e.items[0]->text == "shape" && e.items[0]->items[0]->kind == Expr::name) {
    const Array* a = array_of(*e.items[0]->items[0]);
    const int64_t k = const_int(*e.items[1]);
    if (k < 0 || k >= a->ndim) fail(e.pos, a->name + " has " + std::to_string(a->ndim) + " axes");
    return ival(iconst(a->dims[k]));
  }
  const Array* a = array_of(*e.items[0]);
  Address ad = address(a, subscripts(e), e.pos);
  if (is_floating(a->dtype)) {
    const DType t = a->dtype;
    return fval(flam([ad = std::move(ad), t](const Regs& r) {
      const uintptr_t p = ad.at(r, gpusim::AccessKind::load);
      gpusim::lane_access(p, unsigned(dtype_size(t)), gpusim::AccessKind::load, ad.site);
      return load_as_double(p, t);
    }));
  }
  return ival(ilam([ad = std::move(ad)](const Regs& r) {
    const uintptr_t p = ad.at(r, gpusim::AccessKind::load);
    gpusim::lane_access(p, 8, gpusim::AccessKind::load, ad.site);
    return *reinterpret_cast<const int64_t*>(p);
  }));
}

Val Compiler::unary(const Expr& e) {
  Val a = expr(*e.items[0]);
  if (e.op == Operator::not_)
    return ival(ilam([x = truth(std::move(a))](const Regs& r) -> int64_t { return !x->ev(r); }));
  if (e.op == Operator::plus) return a;
  if (a.ty == Ty::f) return fval(flam([x = std::move(a.f)](const Regs& r) { return -x->ev(r); }));
  return ival(ilam([x = std::move(a.i)](const Regs& r) { return -x->ev(r); }));
}

Val Compiler::binary(const Expr& e) {
  const Operator op = e.op;
  Val a = expr(*e.items[0]), b = expr(*e.items[1]);
  if (op == Operator::matmul)
    fail(e.pos, "no matrix products inside a kernel: a lane computes numbers", "write the loop over k");
  if (op == Operator::div || a.ty == Ty::f || b.ty == Ty::f) {
    FP x = as_float(std::move(a)), y = as_float(std::move(b));
    if (op == Operator::add)
      return fval(flam([x = std::move(x), y = std::move(y)](const Regs& r) {
        ++g_flops;
        return x->ev(r) + y->ev(r);
      }));
    if (op == Operator::sub)
      return fval(flam([x = std::move(x), y = std::move(y)](const Regs& r) {
        ++g_flops;
        return x->ev(r) - y->ev(r);
      }));
    if (op == Operator::mul)
      return fval(flam([x = std::move(x), y = std::move(y)](const Regs& r) {
        ++g_flops;
        return x->ev(r) * y->ev(r);
      }));
    if (op == Operator::div)
      return fval(flam([x = std::move(x), y = std::move(y)](const Regs& r) {
        ++g_flops;
        return x->ev(r) / y->ev(r);
      }));
    if (op == Operator::floor_div)
      return fval(
          flam([x = std::move(x), y = std::move(y)](const Regs& r) { return std::floor(x->ev(r) / y->ev(r)); }));
    if (op == Operator::mod)
      return fval(flam([x = std::move(x), y = std::move(y)](const Regs& r) {
        const double u = x->ev(r), v = y->ev(r), m = std::fmod(u, v);
        return m != 0 && ((m < 0) != (v < 0)) ? m + v : m;
      }));
    if (op == Operator::pow)
      return fval(flam([x = std::move(x), y = std::move(y)](const Regs& r) {
        ++g_flops;
        return std::pow(x->ev(r), y->ev(r));
      }));
  } else {
    IP x = std::move(a.i), y = std::move(b.i);
    if (op == Operator::add)
      return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) { return x->ev(r) + y->ev(r); }));
    if (op == Operator::sub)
      return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) { return x->ev(r) - y->ev(r); }));
    if (op == Operator::mul)
      return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) { return x->ev(r) * y->ev(r); }));
    if (op == Operator::floor_div)
      return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) { return floor_div(x->ev(r), y->ev(r)); }));
    if (op == Operator::mod)
      return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) { return py_mod(x->ev(r), y->ev(r)); }));
    if (op == Operator::pow)
      return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) {
        int64_t base = x->ev(r), n = y->ev(r), out = 1;
        for (; n > 0; --n) out *= base;
        return out;
      }));
  }
  fail(e.pos, "operator '" + std::string(name_of(op)) + "' is not available in a kernel");
}

Val Compiler::compare(const Expr& e) {
  const Operator op = e.op;
  if (op == Operator::in) fail(e.pos, "'in' is not available in a kernel");
  Val a = expr(*e.items[0]), b = expr(*e.items[1]);
  auto pick = [&](auto x, auto y) -> Val {
    if (op == Operator::lt)
      return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) -> int64_t { return x->ev(r) < y->ev(r); }));
    if (op == Operator::le)
      return ival(
          ilam([x = std::move(x), y = std::move(y)](const Regs& r) -> int64_t { return x->ev(r) <= y->ev(r); }));
    if (op == Operator::gt)
      return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) -> int64_t { return x->ev(r) > y->ev(r); }));
    if (op == Operator::ge)
      return ival(
          ilam([x = std::move(x), y = std::move(y)](const Regs& r) -> int64_t { return x->ev(r) >= y->ev(r); }));
    if (op == Operator::eq)
      return ival(
          ilam([x = std::move(x), y = std::move(y)](const Regs& r) -> int64_t { return x->ev(r) == y->ev(r); }));
    return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) -> int64_t { return x->ev(r) != y->ev(r); }));
  };
  if (a.ty == Ty::f || b.ty == Ty::f) return pick(as_float(std::move(a)), as_float(std::move(b)));
  return pick(std::move(a.i), std::move(b.i));
}

Val Compiler::logical(const Expr& e) {
  IP x = truth(expr(*e.items[0])), y = truth(expr(*e.items[1]));
  if (e.op == Operator::and_)
    return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) -> int64_t { return x->ev(r) && y->ev(r); }));
  return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) -> int64_t { return x->ev(r) || y->ev(r); }));
}

Val Compiler::cond(const Expr& e) {
  Val a = expr(*e.items[0]), b = expr(*e.items[2]);
  IP c = truth(expr(*e.items[1]));
  if (a.ty == Ty::f || b.ty == Ty::f) {
    return fval(flam([c = std::move(c), x = as_float(std::move(a)), y = as_float(std::move(b))](const Regs& r) {
      return c->ev(r) ? x->ev(r) : y->ev(r);
    }));
  }
  return ival(ilam([c = std::move(c), x = std::move(a.i), y = std::move(b.i)](const Regs& r) {
    return c->ev(r) ? x->ev(r) : y->ev(r);
  }));
}

std::vector<Val> Compiler::positional(const Expr& e, size_t lo, size_t hi, const std::string& sig) {
  for (const Arg& a : e.args)
    if (!a.name.empty()) fail(a.pos, "no keyword arguments here", sig);
  if (e.args.size() < lo || e.args.size() > hi) fail(e.pos, "expected " + sig);
  std::vector<Val> out;
  for (const Arg& a : e.args) out.push_back(expr(*a.value));
  return out;
}

Val Compiler::math1(const Expr& e, const std::string& n) {
  std::vector<Val> v = positional(e, 1, 1, n + "(x)");
  FP x = as_float(std::move(v[0]));
  double (*fn)(double) = nullptr;
  if (n == "sqrt") fn = [](double u) { return std::sqrt(u); };
  else if (n == "exp") fn = [](double u) { return std::exp(u); };
  else if (n == "log") fn = [](double u) { return std::log(u); };
  else if (n == "tanh") fn = [](double u) { return std::tanh(u); };
  else if (n == "sin") fn = [](double u) { return std::sin(u); };
  else if (n == "cos") fn = [](double u) { return std::cos(u); };
  else if (n == "rsqrt") fn = [](double u) { return 1.0 / std::sqrt(u); };
  else if (n == "floor") fn = [](double u) { return std::floor(u); };
  else fn = [](double u) { return std::ceil(u); };
  return fval(flam([x = std::move(x), fn](const Regs& r) {
    ++g_flops;
    return fn(x->ev(r));
  }));
}

Val Compiler::minmax(const Expr& e, bool is_min) {
  std::vector<Val> v = positional(e, 2, 8, std::string(is_min ? "min" : "max") + "(a, b, ...)");
  bool fl = false;
  for (const Val& x : v) fl = fl || x.ty == Ty::f;
  if (fl) {
    std::vector<FP> xs;
    for (Val& x : v) xs.push_back(as_float(std::move(x)));
    return fval(flam([xs = std::move(xs), is_min](const Regs& r) {
      double m = xs[0]->ev(r);
      for (size_t k = 1; k < xs.size(); ++k) m = is_min ? std::min(m, xs[k]->ev(r)) : std::max(m, xs[k]->ev(r));
      return m;
    }));
  }
  std::vector<IP> xs;
  for (Val& x : v) xs.push_back(std::move(x.i));
  return ival(ilam([xs = std::move(xs), is_min](const Regs& r) {
    int64_t m = xs[0]->ev(r);
    for (size_t k = 1; k < xs.size(); ++k) m = is_min ? std::min(m, xs[k]->ev(r)) : std::max(m, xs[k]->ev(r));
    return m;
  }));
}

// shfl_xor(v, mask), shfl_down(v, delta), shfl_up(v, delta), shfl(v, src_lane): every lane of
// the warp that has not exited takes part (CUDA's full mask).
Val Compiler::shuffle(const Expr& e, const std::string& n) {
  std::vector<Val> v = positional(e, 2, 2, n + "(value, lane_arg)");
  const gpusim::Collective kind = n == "shfl_xor"    ? gpusim::Collective::shfl_xor
                                  : n == "shfl_down" ? gpusim::Collective::shfl_down
                                  : n == "shfl_up"   ? gpusim::Collective::shfl_up
                                                     : gpusim::Collective::shfl_idx;
  IP arg = as_int(std::move(v[1]), e.args[1].pos, "a shuffle's lane argument");
  const void* s = site(e.pos);
  const Pos* p = &e.pos;
  if (v[0].ty == Ty::f) {
    return fval(flam([x = std::move(v[0].f), arg = std::move(arg), kind, s, p](const Regs& r) {
      const double val = x->ev(r);
      const int a = int(arg->ev(r));
      uint64_t bits;
      std::memcpy(&bits, &val, 8);
      *r.at = p;
      bits = gpusim::warp_collective(kind, 0xffffffffu, bits, a, 32, s);
      double out;
      std::memcpy(&out, &bits, 8);
      return out;
    }));
  }
  return ival(ilam([x = std::move(v[0].i), arg = std::move(arg), kind, s, p](const Regs& r) {
    const uint64_t val = uint64_t(x->ev(r));
    const int a = int(arg->ev(r));
    *r.at = p;
    return int64_t(gpusim::warp_collective(kind, 0xffffffffu, val, a, 32, s));
  }));
}

// atomic_add(A, index, value): adds and returns the old value, one lane at a time.
Val Compiler::atomic_add(const Expr& e) {
  for (const Arg& a : e.args)
    if (!a.name.empty()) fail(a.pos, "no keyword arguments here", "atomic_add(A, index, value)");
  if (e.args.size() != 3) fail(e.pos, "expected atomic_add(A, index, value)", "index: i, or (i, j) for a 2-D array");
  Array* a = const_cast<Array*>(array_of(*e.args[0].value));
  a->written = true;
  std::vector<const Expr*> subs;
  if (e.args[1].value->kind == Expr::tuple)
    for (const ExprPtr& x : e.args[1].value->items) subs.push_back(x.get());
  else subs.push_back(e.args[1].value.get());
  Address ad = address(a, subs, e.pos);
  Val v = expr(*e.args[2].value);
  const DType t = a->dtype;
  if (is_floating(t)) {
    return fval(flam([ad = std::move(ad), x = as_float(std::move(v)), t](const Regs& r) {
      const double add = x->ev(r);
      const uintptr_t p = ad.at(r, gpusim::AccessKind::atomic);
      gpusim::lane_access(p, unsigned(dtype_size(t)), gpusim::AccessKind::atomic, ad.site);
      const double old = load_as_double(p, t);
      store_double(p, t, old + add);
      ++g_flops;
      return old;
    }));
  }
  IP x = as_int(std::move(v), e.args[2].pos, "the value added to an int array");
  return ival(ilam([ad = std::move(ad), x = std::move(x)](const Regs& r) {
    const int64_t add = x->ev(r);
    const uintptr_t p = ad.at(r, gpusim::AccessKind::atomic);
    gpusim::lane_access(p, 8, gpusim::AccessKind::atomic, ad.site);
    const int64_t old = *reinterpret_cast<int64_t*>(p);
    *reinterpret_cast<int64_t*>(p) = old + add;
    return old;
  }));
}

Val Compiler::call(const Expr& e) {
  if (e.items[0]->kind != Expr::name) fail(e.pos, "a kernel calls only its built-in functions");
  const std::string& n = e.items[0]->text;
  if (n == "int") {
    std::vector<Val> v = positional(e, 1, 1, "int(x)");
    if (v[0].ty == Ty::i) return std::move(v[0]);
    return ival(ilam([x = std::move(v[0].f)](const Regs& r) { return int64_t(x->ev(r)); }));
  }
  if (n == "float") {
    if (e.args.size() == 1 && e.args[0].value->kind == Expr::string) {
      const std::string& s = e.args[0].value->text;
      if (s == "inf" || s == "+inf") return fval(fconst(INFINITY));
      if (s == "-inf") return fval(fconst(-INFINITY));
      fail(e.pos, "float(\"" + s + "\"): only \"inf\" and \"-inf\" in a kernel");
    }
    std::vector<Val> v = positional(e, 1, 1, "float(x)");
    return fval(as_float(std::move(v[0])));
  }
  if (n == "abs") {
    std::vector<Val> v = positional(e, 1, 1, "abs(x)");
    if (v[0].ty == Ty::f) return fval(flam([x = std::move(v[0].f)](const Regs& r) { return std::fabs(x->ev(r)); }));
    return ival(ilam([x = std::move(v[0].i)](const Regs& r) { return std::abs(x->ev(r)); }));
  }
  if (n == "len") {
    if (e.args.size() != 1) fail(e.pos, "expected len(A)");
    return ival(iconst(array_of(*e.args[0].value)->dims[0]));
  }
  if (n == "min" || n == "max") return minmax(e, n == "min");
  if (n == "sqrt" || n == "exp" || n == "log" || n == "tanh" || n == "sin" || n == "cos" || n == "rsqrt" ||
      n == "floor" || n == "ceil")
    return math1(e, n);
  if (n == "shfl_xor" || n == "shfl_down" || n == "shfl_up" || n == "shfl") return shuffle(e, n);
  if (n == "atomic_add") return atomic_add(e);
  if (n == "syncthreads") fail(e.pos, "syncthreads() is a statement of its own", "write it on its own line");
  if (n == "shared") fail(e.pos, "shared(shape) makes an array: assign it to a name", "tile = shared((16, 16))");
  if (n == "range") fail(e.pos, "range(...) belongs in a for loop", "for k in range(n):");
  fail(e.pos, "'" + n + "' cannot be called in a kernel",
       "a kernel calls syncthreads, shared, atomic_add, shfl_xor/shfl_down/shfl_up/shfl, min, max, abs, int, float, "
       "sqrt, "
       "rsqrt, exp, log, tanh, sin, cos, floor, ceil, len");
}

Val Compiler::expr(const Expr& e) {
  switch (e.kind) {
    case Expr::integer: return ival(iconst(e.int_value));
    case Expr::boolean: return ival(iconst(e.bool_value));
    case Expr::real: return fval(fconst(e.real_value));
    case Expr::name: return name(e);
    case Expr::attr:
      if (e.items[0]->kind == Expr::name) {
        const std::string& o = e.items[0]->text;
        if (o == "threadIdx" || o == "blockIdx" || o == "blockDim" || o == "gridDim") return builtin_var(e);
      }
      fail(e.pos, "attribute '" + e.text + "' is not available in a kernel",
           "a kernel reads threadIdx, blockIdx, blockDim and gridDim (.x, .y, .z) and A.shape[k]");
    case Expr::index: return load(e);
    case Expr::unary: return unary(e);
    case Expr::binary: return binary(e);
    case Expr::compare: return compare(e);
    case Expr::logical: return logical(e);
    case Expr::cond: return cond(e);
    case Expr::call: return call(e);
    case Expr::string: fail(e.pos, "a kernel has no strings");
    default: fail(e.pos, "a kernel computes with numbers only: no lists, tuples, dicts or None here");
  }
}

}  // namespace opscope::lang::kernel::compiler
