// The optimizers' per-element formulas, shared by the CPU kernels (ops/optimizer.cpp) and the
// CUDA kernels (ops/cuda/optimizer.cu), so both compute the same thing in the same order.
// Eigen-free; compiled by g++ and nvcc alike. The formulas are PyTorch's (torch.optim.SGD,
// Adam, AdamW with their default flags).
#pragma once
#include <cmath>

#if defined(__CUDACC__)
#define OPSCOPE_OPTIM_HD __host__ __device__ __forceinline__
#else
#define OPSCOPE_OPTIM_HD inline
#endif

namespace opscope::optim {

// std:: on the host (float stays float), the CUDA overloads on the device.
template <class T> OPSCOPE_OPTIM_HD T root(T x) {
#if defined(__CUDA_ARCH__)
  return sqrt(x);
#else
  return std::sqrt(x);
#endif
}
template <class T> OPSCOPE_OPTIM_HD T power(T x, T y) {
#if defined(__CUDA_ARCH__)
  return pow(x, y);
#else
  return std::pow(x, y);
#endif
}

// SGD: g = dw + λ·w;  with momentum μ: b ← μ·b + g, then g = b (or g + μ·b with Nesterov);
// w ← w − lr·g.
template <class T> struct Sgd {
  T lr, momentum, weight_decay;
  bool nesterov;
};

template <class T> OPSCOPE_OPTIM_HD void sgd_element(const Sgd<T>& c, T& w, T dw, T* buf) {
  T g = dw + c.weight_decay * w;
  if (buf) {
    *buf = c.momentum * *buf + g;
    g = c.nesterov ? g + c.momentum * *buf : *buf;
  }
  w -= c.lr * g;
}

// Adam at step t (1 for the first update): g = dw (+ λ·w for Adam; AdamW instead decays w by
// lr·λ first: decoupled weight decay), m ← β1·m + (1 − β1)·g, v ← β2·v + (1 − β2)·g²,
// w ← w − lr·(m / (1 − β1ᵗ)) / (sqrt(v / (1 − β2ᵗ)) + eps).
template <class T> struct Adam {
  T lr, beta1, beta2, eps, weight_decay;
  bool decoupled;  // AdamW
  T bias1, bias2;  // 1 − β1ᵗ and 1 − β2ᵗ
};

template <class T>
OPSCOPE_OPTIM_HD Adam<T> adam_at_step(T lr, T beta1, T beta2, T eps, T weight_decay, bool decoupled, T t) {
  return {lr, beta1, beta2, eps, weight_decay, decoupled, T(1) - power(beta1, t), T(1) - power(beta2, t)};
}

template <class T> OPSCOPE_OPTIM_HD void adam_element(const Adam<T>& c, T& w, T dw, T& m, T& v) {
  T g = dw;
  if (c.decoupled) w *= T(1) - c.lr * c.weight_decay;
  else g += c.weight_decay * w;
  m = c.beta1 * m + (T(1) - c.beta1) * g;
  v = c.beta2 * v + (T(1) - c.beta2) * g * g;
  w -= c.lr * (m / c.bias1) / (root(v / c.bias2) + c.eps);
}

}  // namespace opscope::optim
