// Host memory of this process, for reports.
#pragma once

#include <cstdint>

namespace dtrain::util {

// Peak resident set size of this process since it started, in bytes (getrusage).
std::int64_t peak_rss_bytes();

// Current resident set size in bytes (/proc/self/statm); 0 where unavailable.
std::int64_t current_rss_bytes();

}  // namespace dtrain::util
