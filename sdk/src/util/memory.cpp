#include "dtrain/util/memory.h"

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string_view>

#include <spdlog/spdlog.h>

namespace dtrain::util {

std::int64_t peak_rss_bytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) {
    return 0;
  }
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

std::int64_t current_rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t total_pages = 0;
  std::int64_t resident_pages = 0;
  if (!(statm >> total_pages >> resident_pages)) {
    return 0;
  }
  return resident_pages * static_cast<std::int64_t>(sysconf(_SC_PAGESIZE));
}

bool retain_freed_host_memory() {
  static const bool in_force = [] {
    const char* raw = std::getenv("DTRAIN_HOST_MEMORY");
    const std::string_view setting = raw != nullptr ? raw : "";
    if (setting == "release") {
      spdlog::debug("host memory: DTRAIN_HOST_MEMORY=release, glibc's defaults kept");
      return false;
    }
    if (!setting.empty() && setting != "retain") {
      spdlog::warn(
          "host memory: DTRAIN_HOST_MEMORY='{}' is neither 'retain' nor 'release'; "
          "keeping freed memory in the process (retain)",
          setting);
    }
    constexpr int kMmapThreshold = 32 << 20;  // glibc's maximum (HEAP_MAX_SIZE / 2)
    constexpr int kTrimThreshold = 1 << 30;
    // No block of its own mapping, whatever its size: above the threshold
    // glibc would still map (and unmap) every block.
    const bool ok = mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 && mallopt(M_MMAP_MAX, 0) == 1 &&
                    mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1;
    if (!ok) {
      spdlog::warn(
          "host memory: mallopt refused the thresholds; freed memory goes back to the "
          "kernel every step");
    }
    return ok;
  }();
  return in_force;
}

}  // namespace dtrain::util
