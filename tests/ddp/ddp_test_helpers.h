// Small helpers the DDP tests share.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "dtrain/util/errors.h"
#include "expect_error.h"

namespace dtrain::testing {

inline at::Tensor flat_parameters(const std::vector<at::Tensor>& parameters) {
  std::vector<at::Tensor> flat;
  for (const auto& p : parameters) {
    flat.push_back(p.detach().reshape({-1}));
  }
  return at::cat(flat);
}

}  // namespace dtrain::testing
