// Weight initialisers PyTorch has and LibTorch lacks, with PyTorch's arithmetic.
#pragma once

#include <torch/types.h>

namespace ltfit {

// torch.nn.init.trunc_normal_(t, mean=0, std, a, b): inverse-CDF sampling of the normal truncated
// to [a, b] (absolute bounds, as PyTorch's: -2 and 2 by default). Fills `t` in place; call under
// a NoGradGuard for parameters.
void trunc_normal_init(torch::Tensor& t, double std, double a = -2.0, double b = 2.0);

}  // namespace ltfit
