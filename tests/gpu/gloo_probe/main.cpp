// probe TORCH_LIB|- SHIM deep|plain: loads a LibTorch library globally (or
// not), then the shim as dtrain loads its Gloo module, and creates a device.
#include <dlfcn.h>
#include <cstdio>
#include <string>
int main(int argc, char** argv) {
  if (argc != 4)
    return 64;
  if (std::string(argv[1]) != "-" && dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    std::printf("torch: %s\n", dlerror());
    return 2;
  }
  const int flags = RTLD_NOW | RTLD_LOCAL | (std::string(argv[3]) == "deep" ? RTLD_DEEPBIND : 0);
  void* shim = dlopen(argv[2], flags);
  if (shim == nullptr) {
    std::printf("shim: %s\n", dlerror());
    return 3;
  }
  auto create = reinterpret_cast<int (*)()>(dlsym(shim, "probe_create"));
  return create();
}
