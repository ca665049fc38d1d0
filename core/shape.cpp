#include "core/shape.h"

#include <cstdio>

#include "core/dtype.h"
#include "core/error.h"

namespace opscope {

DType parse_dtype(std::string_view n) {
  if (n == "float32" || n == "f32" || n == "float") return DType::f32;
  if (n == "float64" || n == "f64" || n == "double") return DType::f64;
  if (n == "int64" || n == "i64" || n == "long" || n == "int") return DType::i64;
  throw Error("unknown dtype '" + std::string(n) + "'", "use float32, float64 or int64");
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) throw Error("negative dimension in shape " + shape_str(s));
    if (d != 0 && n > INT64_MAX / d) throw Error("shape " + shape_str(s) + " has too many elements");
    n *= d;
  }
  return n;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

Strides contiguous_strides(const Shape& s) {
  Strides st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i] > 0 ? s[i] : 1;
  }
  return st;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* what) {
  if (a == b) return a;
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error(std::string(what) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                      " cannot be broadcast (dimension " + std::to_string(i) + ": " + std::to_string(da) + " vs " +
                      std::to_string(db) + ")",
                  "broadcasting matches trailing dimensions; each pair must be equal or one of them 1");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool try_broadcast_shapes(const Shape& a, const Shape& b, Shape& out) {
  const size_t n = std::max(a.size(), b.size());
  out.assign(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  return true;
}

bool can_broadcast_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  size_t off = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[i + off]) return false;
  return true;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const char* what) {
  int64_t r = rank == 0 ? 1 : rank;
  if (axis < -r || axis >= r)
    throw Error(std::string(what) + ": axis " + std::to_string(axis) + " is out of range for a tensor of rank " +
                    std::to_string(rank),
                "valid axes are " + std::to_string(-r) + " .. " + std::to_string(r - 1));
  return axis < 0 ? axis + r : axis;
}

std::string bytes_str(int64_t b) {
  char buf[64];
  double v = static_cast<double>(b);
  if (b < 1024) std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  else if (b < (1 << 20)) std::snprintf(buf, sizeof buf, "%.1f KiB", v / 1024);
  else if (b < (1LL << 30)) std::snprintf(buf, sizeof buf, "%.1f MiB", v / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%.2f GiB", v / (1LL << 30));
  return buf;
}

}  // namespace opscope
