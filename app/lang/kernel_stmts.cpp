// The @kernel compiler's statements (kernel_compiler.h): assignments, stores, shared arrays,
// loops and blocks, and compile_kernel, which runs the whole compiler.
#include "app/lang/interpreter.h"
#include "app/lang/kernel_compiler.h"

namespace opscope::lang::kernel::compiler {

void Compiler::run() {
  for (size_t k = 0; k < f_.params.size(); ++k) {
    const LaunchArg& a = args_[k];
    if (a.kind == LaunchArg::array) arrays_[f_.params[k]] = a.arr;
    else types_[f_.params[k]] = a.kind == LaunchArg::real ? Ty::f : Ty::i;
  }
  // Types: a fixed point (each pass can only turn an int variable into a float one).
  for (int pass = 0; pass < 8; ++pass) {
    changed_ = false;
    infer_block(*f_.body);
    if (!changed_) break;
  }
  for (auto& [name, ty] : types_) slot_of(name, ty);
  for (size_t k = 0; k < f_.params.size(); ++k) {
    const LaunchArg& a = args_[k];
    if (a.kind == LaunchArg::array) continue;
    const auto& [ty, slot] = slots_.at(f_.params[k]);
    if (ty == Ty::f) prog_.float_init.emplace_back(slot, a.kind == LaunchArg::real ? a.f : double(a.i));
    else prog_.int_init.emplace_back(slot, a.i);
  }
  prog_.body = block(*f_.body);
}

NP Compiler::assign_name(const std::string& target, Val v, Pos p) {
  const Ty ty = slots_.at(target).first;
  const int s = slots_.at(target).second;  // not a structured binding: clang 14 cannot capture one
  if (ty == Ty::f)
    return nlam([x = as_float(std::move(v)), s](const Regs& r) {
      r.f[s] = x->ev(r);
      return Flow::next;
    });
  // The type pass gives a name a float slot wherever a float can reach it; a float here would be
  // its mistake, and an error says so instead of the lane reading a missing expression.
  return nlam([x = as_int(std::move(v), p, "the value of an int variable"), s](const Regs& r) {
    r.i[s] = x->ev(r);
    return Flow::next;
  });
}

NP Compiler::store(const Expr& target, Val v) {
  Array* a = const_cast<Array*>(array_of(*target.items[0]));
  a->written = true;
  Address ad = address(a, subscripts(target), target.pos);
  const DType t = a->dtype;
  if (is_floating(t)) {
    return nlam([ad = std::move(ad), x = as_float(std::move(v)), t](const Regs& r) {
      const double val = x->ev(r);
      const uintptr_t p = ad.at(r, gpusim::AccessKind::store);
      gpusim::lane_access(p, unsigned(dtype_size(t)), gpusim::AccessKind::store, ad.site);
      store_double(p, t, val);
      return Flow::next;
    });
  }
  IP x = as_int(std::move(v), target.pos, "a value stored in an int array");
  return nlam([ad = std::move(ad), x = std::move(x)](const Regs& r) {
    const int64_t val = x->ev(r);
    const uintptr_t p = ad.at(r, gpusim::AccessKind::store);
    gpusim::lane_access(p, 8, gpusim::AccessKind::store, ad.site);
    *reinterpret_cast<int64_t*>(p) = val;
    return Flow::next;
  });
}

// name = shared(shape, dtype="float32"): placed once, at a fixed offset of the block's shared memory.
void Compiler::declare_shared(const std::string& target, const Expr& call) {
  if (arrays_.count(target)) {
    if (shared_by_site_.count(&call) && arrays_[target] == shared_by_site_[&call]) return;
    fail(call.pos, "'" + target + "' is already an array", "give each shared array a name of its own");
  }
  if (types_.count(target))
    fail(call.pos, "'" + target + "' is also a number in this kernel", "give the shared array a name of its own");
  const Expr* shape = nullptr;
  DType dt = DType::f32;
  for (const Arg& a : call.args) {
    if (a.name.empty() && !shape) shape = a.value.get();
    else if (a.name == "dtype" && a.value->kind == Expr::string) {
      if (a.value->text == "float32") dt = DType::f32;
      else if (a.value->text == "float64") dt = DType::f64;
      else if (a.value->text == "int64") dt = DType::i64;
      else fail(a.pos, "shared arrays hold float32, float64 or int64, not '" + a.value->text + "'");
    } else {
      fail(a.pos, "expected shared(shape, dtype=\"float32\")");
    }
  }
  if (!shape) fail(call.pos, "expected shared(shape, dtype=\"float32\")", "shared((16, 16))");
  std::vector<int64_t> dims;
  if (shape->kind == Expr::tuple || shape->kind == Expr::list)
    for (const ExprPtr& x : shape->items) dims.push_back(const_int(*x));
  else dims.push_back(const_int(*shape));
  if (dims.empty() || dims.size() > 3) fail(shape->pos, "a shared array has 1 to 3 axes");
  Array& a = prog_.shared.emplace_back();
  a.name = target;
  a.shared = true;
  a.dtype = dt;
  a.ndim = int(dims.size());
  a.numel = 1;
  for (int d = a.ndim - 1; d >= 0; --d) {
    if (dims[size_t(d)] <= 0) fail(shape->pos, "a shared array's sizes must be positive");
    a.dims[d] = dims[size_t(d)];
    a.strides[d] = a.numel;
    a.numel *= dims[size_t(d)];
  }
  const size_t off = (prog_.shared_bytes + 15) / 16 * 16, bytes = size_t(a.numel) * dtype_size(dt);
  if (off + bytes > gpusim::shared_memory_bytes())
    fail(call.pos, "the kernel's shared arrays need " + std::to_string(off + bytes) + " bytes, more than a block's " +
                       std::to_string(gpusim::shared_memory_bytes()) + "");
  a.base = reinterpret_cast<uintptr_t>(gpusim::shared_memory()) + off;
  prog_.shared_bytes = off + bytes;
  arrays_[target] = &a;
  shared_by_site_[&call] = &a;
}

NP Compiler::for_loop(const Stmt& s) {
  if (s.targets.size() != 1 || s.targets[0]->kind != Expr::name)
    fail(s.pos, "a kernel's for loop takes one name", "for k in range(n):");
  const Expr& it = *s.value;
  if (it.kind != Expr::call || it.items[0]->kind != Expr::name || it.items[0]->text != "range")
    fail(it.pos, "a kernel loops over range(...) only", "for k in range(start, stop, step):");
  std::vector<Val> v = positional(it, 1, 3, "range(stop) or range(start, stop[, step])");
  IP start = v.size() >= 2 ? as_int(std::move(v[0]), it.pos, "range's start") : iconst(0);
  IP stop = as_int(std::move(v[v.size() >= 2 ? 1 : 0]), it.pos, "range's stop");
  IP step = v.size() == 3 ? as_int(std::move(v[2]), it.pos, "range's step") : iconst(1);
  const int slot = slots_.at(s.targets[0]->text).second;
  NP body = block(s.body);
  NP orelse = block(s.orelse);
  return nlam([start = std::move(start), stop = std::move(stop), step = std::move(step), slot, body = std::move(body),
               orelse = std::move(orelse)](const Regs& r) {
    const int64_t a = start->ev(r), b = stop->ev(r), st = step->ev(r);
    if (st == 0)
      lane_fail("range() step is zero (" + gpusim::running_lane_text() + ")", "use a positive or negative step");
    for (int64_t k = a; st > 0 ? k < b : k > b; k += st) {
      r.i[slot] = k;
      const Flow fl = body->run(r);
      if (fl == Flow::brk) return Flow::next;
      if (fl == Flow::ret) return fl;
      poll_interrupt();
    }
    return orelse->run(r);
  });
}

NP Compiler::statement(const Stmt& s) {
  switch (s.kind) {
    case Stmt::pass: return nlam([](const Regs&) { return Flow::next; });
    case Stmt::expr: {
      const Expr& e = *s.value;
      if (e.kind == Expr::call && e.items[0]->kind == Expr::name && e.items[0]->text == "syncthreads") {
        if (!e.args.empty()) fail(e.pos, "syncthreads() takes no arguments");
        const void* st = site(e.pos);
        const Pos* p = &e.pos;
        return nlam([st, p](const Regs& r) {
          *r.at = p;
          gpusim::sync_block(st);
          return Flow::next;
        });
      }
      if (e.kind == Expr::call && e.items[0]->kind == Expr::name && e.items[0]->text == "shared")
        fail(e.pos, "shared(shape) makes an array: assign it to a name", "tile = shared((16, 16))");
      Val v = expr(e);
      if (v.ty == Ty::f)
        return nlam([x = std::move(v.f)](const Regs& r) {
          (void)x->ev(r);
          return Flow::next;
        });
      return nlam([x = std::move(v.i)](const Regs& r) {
        (void)x->ev(r);
        return Flow::next;
      });
    }
    case Stmt::assign: {
      if (s.targets.size() != 1) fail(s.pos, "one target per assignment in a kernel");
      const Expr& t = *s.targets[0];
      if (t.kind == Expr::name && is_shared_call(*s.value)) {
        declare_shared(t.text, *s.value);
        return nlam([](const Regs&) { return Flow::next; });
      }
      if (t.kind == Expr::name) return assign_name(t.text, expr(*s.value), s.pos);
      if (t.kind == Expr::index) return store(t, expr(*s.value));
      fail(t.pos, "a kernel assigns a name or an array element", "x = ... or A[i] = ...");
    }
    case Stmt::aug_assign: {
      const Expr& t = *s.targets[0];
      Expr bin(Expr::binary, s.pos);
      bin.op = s.op;  // the operator without '=' (add of "+=")
      bin.text = s.text;
      // The current value is read through the target expression itself (a load of A[i] counts).
      bin.items.push_back(std::unique_ptr<Expr>(const_cast<Expr*>(&t)));
      bin.items.push_back(std::unique_ptr<Expr>(const_cast<Expr*>(s.value.get())));
      struct Release {
        Expr& e;
        ~Release() {
          for (auto& x : e.items) (void)x.release();
        }
      } release{bin};
      Val v = binary(bin);
      if (t.kind == Expr::name) {
        if (!slots_.count(t.text)) fail(t.pos, "'" + t.text + "' is used before it is assigned");
        return assign_name(t.text, std::move(v), s.pos);
      }
      if (t.kind == Expr::index) return store(t, std::move(v));
      fail(t.pos, "a kernel assigns a name or an array element");
    }
    case Stmt::if_: {
      IP c = truth(expr(*s.value));
      NP a = block(s.body), b = block(s.orelse);
      return nlam([c = std::move(c), a = std::move(a), b = std::move(b)](const Regs& r) {
        return c->ev(r) ? a->run(r) : b->run(r);
      });
    }
    case Stmt::while_: {
      IP c = truth(expr(*s.value));
      NP body = block(s.body);
      return nlam([c = std::move(c), body = std::move(body)](const Regs& r) {
        while (c->ev(r)) {
          const Flow fl = body->run(r);
          if (fl == Flow::brk) break;
          if (fl == Flow::ret) return fl;
          poll_interrupt();
        }
        return Flow::next;
      });
    }
    case Stmt::for_: return for_loop(s);
    case Stmt::break_: return nlam([](const Regs&) { return Flow::brk; });
    case Stmt::continue_: return nlam([](const Regs&) { return Flow::cont; });
    case Stmt::ret:
      if (s.value)
        fail(s.pos, "a kernel returns nothing: write its results into an array", "C[i] = value; then return");
      return nlam([](const Regs&) { return Flow::ret; });
    case Stmt::def: fail(s.pos, "no functions inside a kernel");
    case Stmt::class_: fail(s.pos, "no classes inside a kernel");
    default:
      fail(s.pos, "this statement is not available in a kernel",
           "a kernel has assignments, if/elif/else, for over range, while, break, continue, return and syncthreads()");
  }
}

NP Compiler::block(const Block& b) {
  auto seq = std::make_unique<Seq>();
  for (const StmtPtr& s : b) seq->items.push_back(statement(*s));
  if (seq->items.size() == 1) return std::move(seq->items[0]);
  return seq;
}

}  // namespace opscope::lang::kernel::compiler

namespace opscope::lang::kernel {

Program compile_kernel(const Function& f, std::vector<LaunchArg>& args, const Interpreter& in) {
  Program prog;
  compiler::Compiler(f, args, in, prog).run();
  return prog;
}

}  // namespace opscope::lang::kernel
