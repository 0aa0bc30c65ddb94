#include "gloo_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>

#include "dtrain/util/errors.h"

namespace dtrain::dist::gloo_api {

namespace {

// libdtrain_gloo.so sits next to libdtrain_sdk.so, in the build tree and
// when installed; DTRAIN_GLOO_LIBRARY overrides.
std::string library_path() {
  if (const char* path = std::getenv("DTRAIN_GLOO_LIBRARY"); path != nullptr && *path != '\0') {
    return path;
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&gloo_connect_function), &info) != 0 && info.dli_fname) {
    return (std::filesystem::path(info.dli_fname).parent_path() / "libdtrain_gloo.so").string();
  }
  return "libdtrain_gloo.so";
}

}  // namespace

ConnectFn gloo_connect_function() {
  static std::once_flag once;
  static ConnectFn connect = nullptr;
  static std::string problem;
  std::call_once(once, [] {
    const std::string path = library_path();
#if defined(__SANITIZE_ADDRESS__)
    // ASan ends the process at a dlopen with RTLD_DEEPBIND (its malloc would
    // not be the module's); say so here instead (scripts/sanitize.sh).
    problem = "the gloo backend cannot be loaded in a build with AddressSanitizer (its module '" +
              path +
              "' needs RTLD_DEEPBIND, which ASan refuses); use the mpi backend there, or "
              "DTRAIN_SANITIZE=undefined";
    return;
#endif
    // RTLD_DEEPBIND: see Note [Two Glooes in one process].
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (handle == nullptr) {
      problem = "cannot load the Gloo backend '" + path + "': " + dlerror();
      return;
    }
    connect = reinterpret_cast<ConnectFn>(dlsym(handle, "dtrain_gloo_connect"));
    if (connect == nullptr) {
      problem = "'" + path + "' has no dtrain_gloo_connect";
    }
  });
  DTRAIN_CHECK(connect != nullptr, problem);
  return connect;
}

}  // namespace dtrain::dist::gloo_api
