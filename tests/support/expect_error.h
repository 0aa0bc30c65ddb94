// Asserting that a call fails with a dtrain::Error that says something.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "dtrain/util/errors.h"

namespace dtrain::testing {

// Expects `call()` to throw dtrain::Error (or a subclass) whose message
// contains `text`.
template <typename Call>
void expect_error(Call call, const std::string& text) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one saying \"" << text << "\"";
  } catch (const dtrain::Error& error) {
    EXPECT_NE(std::string(error.what()).find(text), std::string::npos) << error.what();
  }
}

}  // namespace dtrain::testing
