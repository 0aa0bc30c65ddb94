// libdtrain_gloo.so's replacement of pthread_mutex_trylock for Debian's
// libgloo: see Note [Gloo's event loop spins on a held pair lock] in
// loop_lock.cpp. Both symbols are looked up by tests with dlsym.
#pragma once

#include <pthread.h>

#include <cstdint>

// The library also defines pthread_mutex_trylock (declared by <pthread.h>):
// like glibc's, but it waits, asleep, up to 1 ms for a held mutex before
// returning EBUSY.

// How many try-locks went through the replacement in this process: a test
// checks that libgloo's calls really bind to it.
extern "C" std::uint64_t dtrain_gloo_trylock_calls();
