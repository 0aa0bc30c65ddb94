// Note [Two Glooes in one process] (sdk/src/dist/gloo/gloo_api.h), checked
// in a live process: after a 2-rank all_reduce on the Gloo backend, every
// gloo function libdtrain_gloo.so calls is Debian's libgloo's, none is
// LibTorch's copy, and Debian's libgloo adds nothing to the global scope;
// and libgloo's std::call_once goes through libdtrain_gloo.so's state (Note
// [libgloo's std::call_once state] in sdk/src/dist/gloo/once_state.cpp).
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <elf.h>
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

// gloo::allreduce(gloo::AllreduceOptions const&): exported by both builds.
constexpr const char* kAllreduce = "_ZN4gloo9allreduceERKNS_16AllreduceOptionsE";
// gloo::Context::Context(int, int, int): exported by both builds.
constexpr const char* kContextCtor = "_ZN4gloo7ContextC1Eiii";
// gloo::transport::tcp::CreateDevice(attr const&): exported by both builds.
constexpr const char* kCreateDevice = "_ZN4gloo9transport3tcp12CreateDeviceERKNS1_4attrE";
// gloo::rendezvous::RedisStore::RedisStore(std::string const&, int): only Debian's.
constexpr const char* kRedisStoreCtor =
    "_ZN4gloo10rendezvous10RedisStoreC1ERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEi";

bool contains(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

struct Loaded {
  std::string name;
  ElfW(Addr) base = 0;
  const ElfW(Dyn) * dynamic = nullptr;
};

// Every loaded object whose path contains `part`.
std::vector<Loaded> loaded_matching(const char* part) {
  struct Search {
    const char* part;
    std::vector<Loaded> found;
  } search{part, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name != nullptr && contains(info->dlpi_name, s->part)) {
          Loaded object{info->dlpi_name, info->dlpi_addr, nullptr};
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
              object.dynamic =
                  reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
            }
          }
          s->found.push_back(object);
        }
        return 0;
      },
      &search);
  return search.found;
}

struct BoundSymbol {
  std::string name;
  std::string resolved_in;  // the file its GOT slot points into
};

// The symbols `object` imports whose names `wanted` accepts (undefined
// there, bound through its GOT: PLT slots and GLOB_DAT), with the file each
// slot now points into. The Gloo objects were loaded with RTLD_NOW, so every
// slot is bound.
template <typename Wanted>
std::vector<BoundSymbol> bound_imports(const Loaded& object, Wanted wanted) {
  std::vector<BoundSymbol> bound;
#if defined(__x86_64__)
  // glibc relocates d_ptr in place on x86-64; an unrelocated (file) value is below the base.
  auto address = [&](ElfW(Addr) value) {
    return value < object.base ? value + object.base : value;
  };
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Rela)* rela = nullptr;
  const ElfW(Rela)* jmprel = nullptr;
  std::size_t rela_size = 0;
  std::size_t jmprel_size = 0;
  for (const ElfW(Dyn)* d = object.dynamic; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB:
        symtab = reinterpret_cast<const ElfW(Sym)*>(address(d->d_un.d_ptr));
        break;
      case DT_STRTAB:
        strtab = reinterpret_cast<const char*>(address(d->d_un.d_ptr));
        break;
      case DT_RELA:
        rela = reinterpret_cast<const ElfW(Rela)*>(address(d->d_un.d_ptr));
        break;
      case DT_RELASZ:
        rela_size = d->d_un.d_val;
        break;
      case DT_JMPREL:
        jmprel = reinterpret_cast<const ElfW(Rela)*>(address(d->d_un.d_ptr));
        break;
      case DT_PLTRELSZ:
        jmprel_size = d->d_un.d_val;
        break;
      default:
        break;
    }
  }
  if (symtab == nullptr || strtab == nullptr) {
    return bound;
  }
  auto scan = [&](const ElfW(Rela) * table, std::size_t bytes) {
    for (std::size_t i = 0; table != nullptr && i < bytes / sizeof(ElfW(Rela)); ++i) {
      const auto type = ELF64_R_TYPE(table[i].r_info);
      if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) {
        continue;
      }
      const ElfW(Sym)& sym = symtab[ELF64_R_SYM(table[i].r_info)];
      const std::string name = strtab + sym.st_name;
      if (sym.st_shndx != SHN_UNDEF || !wanted(name)) {
        continue;
      }
      const auto* slot = reinterpret_cast<void* const*>(object.base + table[i].r_offset);
      bound.push_back({name, library_file_of(*slot)});
    }
  };
  scan(rela, rela_size);
  scan(jmprel, jmprel_size);
#endif
  return bound;
}

// What the checks need from the process, after the backend is in use.
void check_isolation() {
  const auto backend = loaded_matching("libdtrain_gloo.so");
  ASSERT_EQ(backend.size(), 1u) << "libdtrain_gloo.so is not loaded once";
  ASSERT_EQ(loaded_matching("libgloo.so").size(), 1u) << "Debian's libgloo is not loaded";
  ASSERT_EQ(loaded_matching("libtorch_cpu.so").size(), 1u) << "LibTorch is not loaded";

  // The backend's own scope: its dependencies, Debian's libgloo first for gloo names.
  void* handle = dlopen(backend[0].name.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  for (const char* symbol : {kAllreduce, kContextCtor, kCreateDevice, kRedisStoreCtor}) {
    const std::string local = library_file_of(dlsym(handle, symbol));
    EXPECT_TRUE(contains(local, "libgloo.so")) << symbol << " in the backend's scope: " << local;
    const std::string global = library_file_of(dlsym(RTLD_DEFAULT, symbol));
    EXPECT_FALSE(contains(global, "libgloo.so")) << symbol << " leaked into the global scope";
    EXPECT_TRUE(global.empty() || contains(global, "libtorch_cpu.so"))
        << symbol << " in the global scope: " << global;
  }
  // Both builds are really present: LibTorch's gloo::allreduce is the global one.
  EXPECT_TRUE(contains(library_file_of(dlsym(RTLD_DEFAULT, kAllreduce)), "libtorch_cpu.so"));
  EXPECT_NE(dlsym(RTLD_DEFAULT, kAllreduce), dlsym(handle, kAllreduce));
  // A name only Debian's libgloo defines is not visible globally at all.
  EXPECT_EQ(dlsym(RTLD_DEFAULT, kRedisStoreCtor), nullptr);
  // The backend's scope finds its own call_once state before libstdc++'s.
  EXPECT_TRUE(contains(library_file_of(dlsym(handle, "__once_proxy")), "libdtrain_gloo.so"));
  EXPECT_NE(dlsym(handle, "_ZSt11__once_call"), dlsym(RTLD_DEFAULT, "_ZSt11__once_call"));
  dlclose(handle);

#if defined(__x86_64__)
  // What the backend actually calls: its bound GOT slots.
  const auto imports = bound_imports(
      backend[0], [](const std::string& name) { return name.rfind("_ZN4gloo", 0) == 0; });
  EXPECT_GE(imports.size(), 3u) << "too few gloo imports found in libdtrain_gloo.so";
  bool calls_allreduce = false;
  for (const auto& [name, file] : imports) {
    EXPECT_TRUE(contains(file, "libgloo.so")) << name << " is bound to '" << file << "'";
    calls_allreduce = calls_allreduce || name == kAllreduce;
  }
  EXPECT_TRUE(calls_allreduce) << "libdtrain_gloo.so does not import " << kAllreduce;

  // libgloo's std::call_once hands pthread_once the backend's __once_proxy,
  // which reads the backend's std::__once_call, not libstdc++'s.
  const auto once = bound_imports(loaded_matching("libgloo.so")[0],
                                  [](const std::string& name) { return name == "__once_proxy"; });
  ASSERT_EQ(once.size(), 1u) << "libgloo does not import __once_proxy";
  EXPECT_TRUE(contains(once[0].resolved_in, "libdtrain_gloo.so"))
      << "libgloo's __once_proxy is bound to '" << once[0].resolved_in << "'";
#endif
}

TEST(GlooIsolation, BackendBindsDebiansGlooAndLeaksNoSymbols) {
  dtrain::testing::run_gloo_ranks(2, 30s, [](int rank, int) {
    at::Tensor t = at::full({1000}, rank + 1.0);
    dist::all_reduce(t);
    EXPECT_TRUE(at::equal(t, at::full({1000}, 3.0))) << t;
    check_isolation();
  });
}

}  // namespace
