// Errors raised by dtrain.
//
// Contract: a bad input raises dtrain::Error (or a subclass) whose message
// names the argument, the value and what was expected. DTRAIN_CHECK is for
// user errors; DTRAIN_INTERNAL_ASSERT is for bugs in dtrain itself and adds
// the file and line. Library code never calls exit(); destructors log
// instead of throwing.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace dtrain {

// Base class of every exception dtrain raises on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A file or directory could not be read or written, or its contents are malformed.
class IOError : public Error {
 public:
  using Error::Error;
};

// An invariant of dtrain itself was broken: a bug, please report it.
class InternalError : public Error {
 public:
  using Error::Error;
};

namespace detail {
// Concatenates anything streamable; the message builder of the check macros.
template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace detail

}  // namespace dtrain

// DTRAIN_CHECK(n > 0, "npoint must be positive, got ", n);
#define DTRAIN_CHECK(cond, ...)                                     \
  do {                                                              \
    if (!(cond)) [[unlikely]] {                                     \
      throw ::dtrain::Error(::dtrain::detail::concat(__VA_ARGS__)); \
    }                                                               \
  } while (false)

// Like DTRAIN_CHECK, with a chosen exception type.
#define DTRAIN_CHECK_AS(ErrorType, cond, ...)                 \
  do {                                                        \
    if (!(cond)) [[unlikely]] {                               \
      throw ErrorType(::dtrain::detail::concat(__VA_ARGS__)); \
    }                                                         \
  } while (false)

#define DTRAIN_INTERNAL_ASSERT(cond, ...)                                                      \
  do {                                                                                         \
    if (!(cond)) [[unlikely]] {                                                                \
      throw ::dtrain::InternalError(                                                           \
          ::dtrain::detail::concat("internal error at ", __FILE__, ":", __LINE__, ": ", #cond, \
                                   " failed. " __VA_OPT__(, ) __VA_ARGS__));                   \
    }                                                                                          \
  } while (false)
