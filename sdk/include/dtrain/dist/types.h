// Reduce operations, per-collective options and the errors of collectives.
#pragma once

#include <chrono>
#include <string>

#include "dtrain/util/errors.h"

namespace dtrain::dist {

enum class ReduceOp { kSum, kProduct, kMin, kMax, kAvg };

std::string to_string(ReduceOp op);

// A collective failed: a peer vanished, a transport broke, or the inputs
// disagree across ranks.
class CollectiveError : public Error {
 public:
  using Error::Error;
};

// A collective did not finish within its timeout.
class CollectiveTimeoutError : public CollectiveError {
 public:
  using CollectiveError::CollectiveError;
};

// Zero timeout in any option means "the group's default timeout".
struct AllreduceOptions {
  ReduceOp op = ReduceOp::kSum;
  std::chrono::milliseconds timeout{0};
};
struct ReduceOptions {
  int root = 0;
  ReduceOp op = ReduceOp::kSum;
  std::chrono::milliseconds timeout{0};
};
struct BroadcastOptions {
  int root = 0;
  std::chrono::milliseconds timeout{0};
};
struct RootOptions {
  int root = 0;
  std::chrono::milliseconds timeout{0};
};
struct CollectiveOptions {
  std::chrono::milliseconds timeout{0};
};

}  // namespace dtrain::dist
