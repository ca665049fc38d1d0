// The CPU kernels of the pointwise ops, one template instantiated per formula of ops/pointwise.h.
#include "ops/pointwise_cpu.h"

#include "ops/cpu_util.h"
#include "ops/pointwise_op.h"

namespace opscope::cpu {

namespace {

// The computing dtype T and the stored one R (R = T, or int64 for the 0/1 of a comparison).
template <class F> void visit_compute(DType compute, DType stored, bool ints, const std::string& op, F&& f) {
  auto with_r = [&](auto t) {
    using T = decltype(t);
    if (stored == dtype_of<T>()) f(t, t);
    else if (stored == DType::i64) f(t, int64_t{});
    else throw Error("internal: " + op + " stores " + dtype_name(stored) + " from " + dtype_name(compute));
  };
  if (compute == DType::f32) with_r(float{});
  else if (compute == DType::f64) with_r(double{});
  else if (ints) with_r(int64_t{});
  else throw Error(op + ": expected a floating-point tensor, got " + dtype_name(compute));
}

// Contiguous operands: chunks of the flat range over the thread pool (elements are independent,
// so any thread count gives the same bits).
template <Formula F, class T> void dense_chunks(const T* a, const T* b, T* y, int64_t n, const Params& p) {
  parallel_for(n, grain_for(1.0), [&](int64_t i0, int64_t i1) {
    pointwise_chunk<F, T>(a + i0, b ? b + i0 : nullptr, y + i0, i1 - i0, p);
  });
}

template <Formula F> void run_pointwise(KernelCtx& k) {
  const Params p = pointwise_params(k.op, k.attrs);
  Tensor& out = k.out();
  const int64_t n = out.numel();
  if constexpr (pointwise::arity_of(F) == 1) {
    const Tensor& x = k.in(0);  // contiguous: the op does not accept strided inputs
    visit_compute(x.dtype(), out.dtype(), pointwise::takes_int64(F), k.op.name, [&](auto t, auto) {
      using T = decltype(t);
      if constexpr (pointwise::takes_int64(F) || std::is_floating_point_v<T>)
        dense_chunks<F, T>(x.data<T>(), nullptr, out.data<T>(), n, p);
    });
  } else {
    const DType compute = is_floating(out.dtype()) ? out.dtype() : promote(k.in(0).dtype(), k.in(1).dtype());
    const Tensor a = as_dtype(k.in(0), compute), b = as_dtype(k.in(1), compute);
    visit_compute(compute, out.dtype(), pointwise::takes_int64(F), k.op.name, [&](auto t, auto r) {
      using T = decltype(t);
      using R = decltype(r);
      if constexpr (pointwise::takes_int64(F) || std::is_floating_point_v<T>) {
        const bool dense =
            a.is_contiguous() && b.is_contiguous() && a.shape() == out.shape() && b.shape() == out.shape();
        if constexpr (std::is_same_v<T, R>) {
          if (dense) return dense_chunks<F, T>(a.data<T>(), b.data<T>(), out.data<T>(), n, p);
        }
        broadcast_binary<T, R>(a, b, out, [p](T x, T y) { return static_cast<R>(pointwise::eval<F, T>(x, y, p)); });
      }
    });
  }
}

}  // namespace

KernelFn pointwise_kernel(Formula f) {
  switch (f) {
#define OPSCOPE_PW_KERNEL(name, arity, ints) \
  case Formula::name: return run_pointwise<Formula::name>;
    OPSCOPE_POINTWISE_FORMULAS(OPSCOPE_PW_KERNEL)
#undef OPSCOPE_PW_KERNEL
  }
  throw Error("internal: no such pointwise formula");
}

void make_pointwise(OpDef& d, Formula f, std::vector<std::string> params) {
  if (d.name != pointwise::name_of(f))
    throw Error("internal: op '" + d.name + "' takes the formula of '" + pointwise::name_of(f) + "'");
  d.pointwise = {pointwise::arity_of(f), static_cast<int>(f), std::move(params)};
  d.elementwise = true;
  d.kernel(Device::cpu, "default", pointwise_kernel(f));
}

}  // namespace opscope::cpu
