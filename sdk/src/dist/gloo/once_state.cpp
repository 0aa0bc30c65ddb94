// Note [libgloo's std::call_once state]
//
// std::call_once, inlined from libstdc++'s <mutex> into libgloo (Gloo's
// tcp::Device calls it, in interfaceToBusID), stores the callable in two
// thread-local variables, std::__once_callable and std::__once_call, then
// calls pthread_once with __once_proxy, which calls std::__once_call. Writer
// and reader must be one pair. In a plain process they are: every object
// binds the three names to libstdc++'s. But libgloo is loaded under
// RTLD_DEEPBIND (Note [Two Glooes in one process] in gloo_api.h), so its
// references bind in this module's scope first, while libstdc++'s own
// __once_proxy reads the std::__once_call that the global scope gives it.
// Should the two ever differ -- an object ahead of libstdc++ in the global
// scope that defines the name -- libgloo would fill one variable and
// __once_proxy would jump through the other, still null: a call to address
// 0 from pthread_once, which is how every Gloo group crashed on the lent GPU
// machine's image (tests/gpu/README.md, "Gloo on the image"; not yet
// confirmed to be this).
//
// So this module defines the three itself, as it defines
// pthread_mutex_trylock (Note [Gloo's event loop spins on a held pair
// lock]): under RTLD_DEEPBIND libgloo's references, and this module's own,
// bind here first, whatever else the process loads, and the module is
// loaded RTLD_LOCAL, so the rest of the process keeps libstdc++'s.
// __once_proxy does what libstdc++'s does. tests/dist/test_gloo_isolation.cpp
// checks that libgloo's __once_proxy is this one.
#include <mutex>

// The definitions of what <mutex> declares `extern __thread`.
namespace std {

__thread void* __once_callable;
__thread void (*__once_call)();

}  // namespace std

extern "C" void __once_proxy() {
  std::__once_call();
}
