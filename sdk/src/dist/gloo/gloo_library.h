// Loads libdtrain_gloo.so once per process, in its own symbol scope.
#pragma once

#include "gloo_api.h"

namespace dtrain::dist::gloo_api {

using ConnectFn = Communicator* (*)(const ConnectOptions*, const StoreCallbacks*);

// The library's entry point; throws dtrain::Error saying where it looked
// when the library cannot be loaded.
ConnectFn gloo_connect_function();

}  // namespace dtrain::dist::gloo_api
