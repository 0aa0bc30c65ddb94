#include "dtrain/util/build_info.h"

#include <cstdlib>

#include "dtrain/config.h"
#include "dtrain/util/errors.h"
#include "dtrain_source_revision.h"  // generated at every build: cmake/SourceRevision.cmake

namespace dtrain::util {

std::string BuildInfo::identity() const {
  return "dtrain " + version + " (source " + source_revision + "), LibTorch " + libtorch_version;
}

std::string BuildInfo::describe() const {
  return identity() + (cuda ? ", with CUDA" : ", without CUDA");
}

const BuildInfo& build_info() {
  static const BuildInfo info{DTRAIN_VERSION_STRING, DTRAIN_SOURCE_REVISION,
                              DTRAIN_LIBTORCH_VERSION, DTRAIN_WITH_CUDA != 0};
  return info;
}

bool mixed_builds_allowed() {
  const char* value = std::getenv("DTRAIN_ALLOW_MIXED_BUILDS");
  const std::string text = value == nullptr ? "" : value;
  DTRAIN_CHECK(text.empty() || text == "0" || text == "1", "DTRAIN_ALLOW_MIXED_BUILDS='", text,
               "' is not 0 or 1");
  return text == "1";
}

}  // namespace dtrain::util
