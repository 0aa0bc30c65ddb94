#include "dtrain/util/build_info.h"

#include "dtrain/config.h"
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

}  // namespace dtrain::util
