// Element types: float32 for work, float64 for gradcheck, int64 for indices and masks.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace opscope {

enum class DType : uint8_t { f32, f64, i64 };

inline size_t dtype_size(DType t) { return t == DType::f32 ? 4 : 8; }
inline bool is_floating(DType t) { return t != DType::i64; }
inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::i64: return "int64";
  }
  return "?";
}
// Parses "float32"/"f32"/"float", "float64"/"f64"/"double", "int64"/"i64"/"long".
DType parse_dtype(std::string_view name);

// NumPy-like promotion: int64 < float32 < float64.
inline DType promote(DType a, DType b) {
  if (a == DType::f64 || b == DType::f64) return DType::f64;
  if (a == DType::f32 || b == DType::f32) return DType::f32;
  return DType::i64;
}

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }

// sim: the simulated CUDA device (gpusim/): the CUDA kernels run on the CPU, lane by lane.
enum class Device : uint8_t { cpu, cuda, sim };
inline const char* device_name(Device d) { return d == Device::cpu ? "cpu" : d == Device::cuda ? "cuda" : "sim"; }
constexpr int kNumDevices = 3;

}  // namespace opscope
