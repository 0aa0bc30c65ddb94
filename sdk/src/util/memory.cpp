#include "dtrain/util/memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

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

}  // namespace dtrain::util
