// Asserting that a call fails with an error that says something.
#pragma once

#include <exception>
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

// The message of the exception `call()` throws (a dtrain::Error's, or a
// LibTorch check's, backtrace and all); "" when it returns.
template <typename Call>
std::string error_of(Call call) {
  try {
    call();
  } catch (const std::exception& error) {
    return error.what();
  }
  return "";
}

}  // namespace dtrain::testing
