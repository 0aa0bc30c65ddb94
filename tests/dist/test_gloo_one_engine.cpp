// Note [One Gloo in the process] (sdk/src/dist/gloo/torch_gloo.h), checked
// in a live process: after a 2-rank all_reduce on the Gloo backend, no
// other Gloo library is loaded, Gloo's names resolve into LibTorch, and
// dtrain's library defines none of them.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <link.h>

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "dtrain/dist/init.h"
#include "gloo_ranks.h"
#include "test_support.h"

namespace {

using dtrain::testing::library_file_of;

namespace dist = dtrain::dist;
using namespace std::chrono_literals;

// gloo::allreduce(gloo::AllreduceOptions const&) and
// gloo::transport::tcp::CreateDevice(attr const&): what LibTorch's Gloo exports.
constexpr const char* kAllreduce = "_ZN4gloo9allreduceERKNS_16AllreduceOptionsE";
constexpr const char* kCreateDevice = "_ZN4gloo9transport3tcp12CreateDeviceERKNS1_4attrE";

bool contains(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

// The paths of every loaded object whose path contains `part`.
std::vector<std::string> loaded_matching(const char* part) {
  struct Search {
    const char* part;
    std::vector<std::string> found;
  } search{part, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name != nullptr && contains(info->dlpi_name, s->part)) {
          s->found.emplace_back(info->dlpi_name);
        }
        return 0;
      },
      &search);
  return search.found;
}

void check_one_gloo() {
  EXPECT_TRUE(loaded_matching("libgloo").empty())
      << "a Gloo library is loaded: " << loaded_matching("libgloo")[0];
  EXPECT_TRUE(loaded_matching("dtrain_gloo").empty()) << "a Gloo module is loaded";
  for (const char* symbol : {kAllreduce, kCreateDevice}) {
    const std::string file = library_file_of(dlsym(RTLD_DEFAULT, symbol));
    EXPECT_TRUE(contains(file, "libtorch_cpu.so")) << symbol << " resolves into '" << file << "'";
  }
  // dtrain's own library (the one that holds init_process_group) defines no gloo name.
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&dist::destroy_process_group), &info), 0);
  void* sdk = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(sdk, nullptr) << dlerror();
  for (const char* symbol : {kAllreduce, kCreateDevice}) {
    EXPECT_FALSE(contains(library_file_of(dlsym(sdk, symbol)), info.dli_fname))
        << symbol << " is defined in " << info.dli_fname;
  }
  dlclose(sdk);
}

TEST(GlooOneEngine, CollectivesRunOnLibTorchsGlooAndNoOther) {
  dtrain::testing::run_gloo_ranks(2, 30s, [](int rank, int) {
    at::Tensor t = at::full({1000}, rank + 1.0);
    dist::all_reduce(t);
    EXPECT_TRUE(at::equal(t, at::full({1000}, 3.0))) << t;
    check_one_gloo();
  });
}

}  // namespace
