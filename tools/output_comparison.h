// One output of a compiled model against PyTorch's reference: the tolerance it is held to
// (docs/CLI.md, `verify`), its error figures, and for classifier-shaped outputs whether the
// predicted classes agree. Shared by `verify` (one input set or a dataset) and `compare`.
// Thread-safety: free functions, no shared state.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tools/npy.h"

namespace neuronc::tools {

// When an output matches. fp32 (auto-cast none): every element within atol + rtol*|ref|. With
// auto-cast, bf16 rounding errors grow with the scale of the whole tensor, not with each
// element, so the absolute part is scaled by max|ref| (an element near zero is held to the
// tensor's scale, not to zero), and the output's cosine similarity must reach the end-to-end
// criterion of the transformer and vision tests (0.999). Explicit --atol/--rtol are absolute.
struct Tolerance {
  double atol = 1e-4, rtol = 1e-3;
  bool atol_relative_to_max = false;
  double min_cosine = -2;  // below any cosine: no cosine criterion
  std::string describe() const;
};

// verify's --atol, --rtol and --min-cosine: a negative atol or rtol, or a min_cosine of -2 or
// less, keeps the default.
struct ToleranceOverrides {
  double atol = -1, rtol = -1, min_cosine = -2;
};

// The criterion of one output: the fp32 defaults, or the bf16 criterion when `bf16_criterion`
// (the compile auto-casts, or the output is bf16/f16: PyTorch rounds it too, at points of its
// own); then the overrides, which make atol absolute.
Tolerance output_tolerance(bool bf16_criterion, const ToleranceOverrides& overrides);

struct Comparison {
  std::string name;
  bool shape_ok = true, pass = true;
  double max_abs = 0, max_rel = 0, cosine = 1;
  size_t mismatches = 0, first_mismatch = 0, numel = 0;
  Tolerance tol;  // the criterion this output was held to
};

// The elements of `a` as doubles (bf16/f16 widened exactly, complex: the real parts).
std::vector<double> to_doubles(const NpyArray& a);

// `got` against `want` under `tol`: max absolute and relative error (relative where |ref| >
// 1e-6), cosine similarity over the finite elements, elements outside the tolerance. A NaN
// where the reference has NaN, or the same infinity, counts as equal.
Comparison compare_output(const std::string& name, const NpyArray& got, const NpyArray& want,
                          const Tolerance& tol);

// A classifier-shaped output: rank 2 ([batch, classes]), a floating-point dtype (f64, f32, f16,
// bf16) and at least 2 classes. Its rows are read as logits whatever the model means by them.
bool is_classifier_shaped(const NpyArray& a);

// How often the classes of the compiled model's rows agree with PyTorch's: `top1` rows whose
// first largest logit (torch.argmax's pick; NaN counts as largest) is the reference's, `top5`
// rows where the reference's first largest is among the row's 5 largest (ties to the lower
// index).
struct TopKAgreement {
  size_t rows = 0, top1 = 0, top5 = 0;
  size_t classes = 0;
};

// Adds the rows of `got` and `want` (classifier-shaped, the same shape) to `agreement`.
void count_top_k_agreement(const NpyArray& got, const NpyArray& want, TopKAgreement& agreement);

}  // namespace neuronc::tools
