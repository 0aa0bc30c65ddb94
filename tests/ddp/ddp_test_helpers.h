// Small helpers the DDP tests share.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <string>
#include <vector>

#include "dtrain/util/errors.h"

namespace dtrain::testing {

// The message of the dtrain::Error `fn` throws ("" when it does not throw).
template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const dtrain::Error& e) {
    return e.what();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "";
}

inline at::Tensor flat_parameters(const std::vector<at::Tensor>& parameters) {
  std::vector<at::Tensor> flat;
  for (const auto& p : parameters) {
    flat.push_back(p.detach().reshape({-1}));
  }
  return at::cat(flat);
}

}  // namespace dtrain::testing
