// Skipping a GPU test, saying why, where dtrain was built without CUDA or
// no CUDA device is visible.
#pragma once

#include <ATen/Context.h>
#include <gtest/gtest.h>

#include "dtrain/config.h"

#define SKIP_WITHOUT_CUDA()                                                         \
  do {                                                                              \
    if (!DTRAIN_WITH_CUDA) {                                                        \
      GTEST_SKIP() << "dtrain was built without CUDA (DTRAIN_CUDA=OFF or no nvcc)"; \
    }                                                                               \
    if (!at::hasCUDA()) {                                                           \
      GTEST_SKIP() << "no CUDA device visible";                                     \
    }                                                                               \
  } while (false)
