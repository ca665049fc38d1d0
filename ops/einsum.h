// einsum's equation, parsed once against its operands' shapes, and the plan both devices' loop
// kernels run (Eigen-free: ops/cuda/einsum.cu includes it). "bij,bjk->bik" names each axis by a
// letter; letters shared by operands are multiplied along, letters missing from the output are
// summed over; "..." stands for the same leading axes in every operand; without "->" the output
// is the letters used once, in alphabetical order (NumPy's rule).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/shape.h"
#include "ops/hd.h"

namespace opscope {

constexpr int kEinsumMaxOperands = 4;
constexpr int kEinsumMaxLabels = 16;

// Labels are numbered: the output's first (in the output's order), then the summed ones.
struct EinsumSpec {
  std::vector<std::vector<int>> operands;  // each operand's label per axis
  std::vector<int> output;  // 0 .. output.size() − 1
  std::vector<int64_t> sizes;  // per label
  std::vector<char> letters;  // per label: the letter it was written with (ellipsis axes get free ones)
  Shape out_shape() const;
  // The subscripts of the labels, as an equation would write them ("bik").
  std::string subscripts(const std::vector<int>& labels) const;
  // True when some operand names a label twice (a diagonal: "ii->i").
  bool repeats_a_label() const;
};

// Parses `equation` for operands of these shapes; throws an Error naming the op, the equation
// and what does not fit (a letter with two sizes, the wrong number of letters for a shape).
EinsumSpec parse_einsum(const std::string& equation, const std::vector<Shape>& shapes);

// The loops of the kernels: output element e = Σ over the summed labels of the product of the
// operands at the labels' values. stride[k][l]: operand k's element stride for label l (added up
// when it names l twice, 0 when it does not name l).
struct EinsumPlan {
  int operands = 0, labels = 0, out_labels = 0;
  int64_t size[kEinsumMaxLabels] = {};
  int64_t stride[kEinsumMaxOperands][kEinsumMaxLabels] = {};
  int64_t summed = 1;  // product of the summed labels' sizes
};
EinsumPlan einsum_plan(const EinsumSpec& s, const std::string& op);

template <class T, class Ptrs> OPSCOPE_HD T einsum_element(const EinsumPlan& p, Ptrs operand, int64_t e) {
  int64_t base[kEinsumMaxOperands] = {};
  for (int l = p.out_labels - 1; l >= 0; --l) {  // the output is row-major over its labels
    const int64_t v = e % p.size[l];
    e /= p.size[l];
    for (int k = 0; k < p.operands; ++k) base[k] += v * p.stride[k][l];
  }
  T acc = T(0);
  for (int64_t r = 0; r < p.summed; ++r) {
    int64_t rest = r, off[kEinsumMaxOperands];
    for (int k = 0; k < p.operands; ++k) off[k] = base[k];
    for (int l = p.labels - 1; l >= p.out_labels; --l) {
      const int64_t v = rest % p.size[l];
      rest /= p.size[l];
      for (int k = 0; k < p.operands; ++k) off[k] += v * p.stride[k][l];
    }
    T prod = T(1);
    for (int k = 0; k < p.operands; ++k) prod *= operand[k][off[k]];
    acc += prod;
  }
  return acc;
}

}  // namespace opscope
