// The message of the exception a call raises, for tests that check what an
// error says: error_text<c10::Error>([&] { model(bad_input); }).
#pragma once

#include <functional>
#include <string>

namespace dtrain::testing {

// what() of the `Error` that `call` throws; "no error" when it returns.
// Other exception types pass through (the test then fails on them).
template <typename Error>
std::string error_text(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace dtrain::testing
