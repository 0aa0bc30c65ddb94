// Asserting that a call fails with an error that says something.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "dtrain/util/errors.h"

namespace dtrain::testing {

// Expects `call()` to throw `Error` (dtrain::Error by default, or a
// subclass; c10::Error for LibTorch's checks) whose message contains `text`.
template <typename Error = dtrain::Error, typename Call>
void expect_error(Call call, const std::string& text) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one saying \"" << text << "\"";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(text), std::string::npos) << error.what();
  }
}

}  // namespace dtrain::testing
