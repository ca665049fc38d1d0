// The simulator's __half: IEEE binary16 storage, arithmetic in float, conversions rounded to
// nearest even as __float2half does on the GPU.
#pragma once
#include <cstdint>
#include <cstring>

struct __half {
  uint16_t bits;
  __half() = default;  // trivial: __half arrays may live in shared memory
  __half(float f);
  operator float() const;
};

namespace gpusim {
inline uint16_t float_to_half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return uint16_t(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));  // inf, nan
  if (absx >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds past 65504: inf
  if (absx < 0x38800000u) {  // subnormal half (or zero): scale into the 10-bit field, round to even
    float a;
    std::memcpy(&a, &absx, 4);
    const float scaled = a * 16777216.0f;  // 2^24: units of the smallest subnormal
    uint32_t m = uint32_t(scaled);
    const float rest = scaled - float(m);
    if (rest > 0.5f || (rest == 0.5f && (m & 1))) ++m;
    return uint16_t(sign | m);
  }
  uint32_t e = ((absx >> 23) - 112) << 10, m = (absx >> 13) & 0x3ffu;
  uint32_t h = e | m;
  const uint32_t round = absx & 0x1fffu;
  if (round > 0x1000u || (round == 0x1000u && (h & 1))) ++h;
  return uint16_t(sign | h);
}
inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t x;
  if (e == 0) {
    const float f = float(m) / 16777216.0f;
    std::memcpy(&x, &f, 4);
    x |= sign;
  } else if (e == 31) {
    x = sign | 0x7f800000u | (m << 13);
  } else {
    x = sign | ((e + 112) << 23) | (m << 13);
  }
  float out;
  std::memcpy(&out, &x, 4);
  return out;
}
}  // namespace gpusim

inline __half::__half(float f) : bits(gpusim::float_to_half_bits(f)) {}
inline __half::operator float() const { return gpusim::half_bits_to_float(bits); }
inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __half2float(__half h) { return float(h); }
