#include "membership.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <random>
#include <vector>

#include <spdlog/spdlog.h>

#include "dtrain/dist/same_settings.h"
#include "dtrain/dist/types.h"
#include "dtrain/util/build_info.h"
#include "dtrain/util/errors.h"
#include "socket.h"

namespace dtrain::dist {

namespace {

// One id per process, to tell two processes claiming the same rank apart;
// the same for every call in a process, so one that retries
// init_process_group after a failure finds its own claim rather than a
// rival's. Made afresh after a fork: a forked child is another process.
std::string process_token() {
  static std::mutex mutex;
  static pid_t owner = 0;
  static std::string token;
  std::lock_guard<std::mutex> lock(mutex);
  if (owner != getpid()) {
    owner = getpid();
    std::random_device seed;
    token = net::host_name() + ":" + std::to_string(owner) + ":" + std::to_string(seed());
  }
  return token;
}

std::string bytes_text(const Bytes& b) {
  return std::string(b.begin(), b.end());
}

Bytes text_bytes(const std::string& text) {
  return Bytes(text.begin(), text.end());
}

std::string rank_key(int rank) {
  return "rank/" + std::to_string(rank);
}

std::string build_key(int rank) {
  return "build/" + std::to_string(rank);
}

// Note [One build per job], before the rank is claimed: publish this
// process's build, and count it as a mismatch when the first process to
// arrive runs another.
void record_build(Store& store, const MemberOptions& me) {
  store.set(build_key(me.rank), text_bytes(me.build));
  const std::string first = bytes_text(store.compare_set("build", {}, text_bytes(me.build)));
  if (first != me.build) {
    store.add("build/mismatches", 1);
  }
}

}  // namespace

void check_membership(Store& store, const MemberOptions& me) {
  const int rank = me.rank;
  const int world_size = me.world_size;
  const std::string size_text = std::to_string(world_size);
  const Bytes agreed = store.compare_set("world_size", {}, text_bytes(size_text));
  DTRAIN_CHECK(bytes_text(agreed) == size_text, "init_process_group: rank ", rank,
               " was started with world size ", world_size, " but another rank with world size ",
               bytes_text(agreed), me.stale_hint);
  record_build(store, me);
  const std::string token = process_token();
  const Bytes owner = store.compare_set(rank_key(rank), {}, text_bytes(token));
  DTRAIN_CHECK(bytes_text(owner) == token, "init_process_group: rank ", rank,
               " was claimed twice: by process ", bytes_text(owner), " and by this one (", token,
               "); every process needs its own rank", me.stale_hint);
  std::vector<std::string> keys;
  for (int r = 0; r < world_size; ++r) {
    keys.push_back(rank_key(r));
  }
  const auto timeout = me.timeout;
  try {
    try {
      store.wait(keys, timeout);
    } catch (const StoreTimeoutError&) {
      std::string missing;
      try {
        for (int r = 0; r < world_size; ++r) {
          if (!store.check({keys[r]})) {
            missing += (missing.empty() ? "" : ", ") + std::to_string(r);
          }
        }
      } catch (const StoreError& e) {
        throw CollectiveTimeoutError("init_process_group: rank " + std::to_string(rank) +
                                     " waited " + std::to_string(timeout.count()) + " ms for all " +
                                     std::to_string(world_size) +
                                     " ranks to join, then lost the store (" + e.what() + ")");
      }
      throw CollectiveTimeoutError("init_process_group: rank " + std::to_string(rank) + " waited " +
                                   std::to_string(timeout.count()) + " ms, but rank(s) " + missing +
                                   " of " + std::to_string(world_size) + " never joined");
    }
  } catch (const StoreError& e) {
    // The store's host (rank 0) gave up first -- typically on the same missing ranks.
    throw CollectiveError("init_process_group: rank " + std::to_string(rank) +
                          " lost the store while waiting for all " + std::to_string(world_size) +
                          " ranks to join (" + e.what() + ")");
  }
}

// Note [One build per job], after every rank has claimed its own: rank 0
// reads every rank's build and writes the verdict, which the others wait
// for, so the store answers world_size reads, not world_size squared. Rank
// 0 often hosts the store, so it fails only once the others have read the
// verdict (or a minute has passed): failing at once would take the store
// away while they wait, and they would report that instead.
namespace {

void compare_builds(Store& store, const MemberOptions& me) {
  if (!store.check({"build/mismatches"})) {
    return;
  }
  const std::string advice = std::string(". ") + util::kSameBuildAdvice;
  if (me.rank != 0) {
    if (me.allow_mixed_builds) {
      return;  // rank 0 warns
    }
    store.wait({"build/verdict"}, me.timeout);
    const std::string verdict = bytes_text(store.get("build/verdict"));
    store.set("build/read/" + std::to_string(me.rank), text_bytes("1"));
    throw Error(verdict + advice);
  }
  std::vector<std::vector<Setting>> builds(me.world_size);
  for (int r = 0; r < me.world_size; ++r) {
    builds[r] = {{"build", bytes_text(store.get(build_key(r)))}};
  }
  const std::vector<std::string> differences = settings_disagreements(builds);
  const std::string verdict =
      "init_process_group: the processes of this job run different builds of dtrain (" +
      (differences.empty() ? std::string("all ranks agree, but a previous job's record does not")
                           : differences.front()) +
      ")" + me.stale_hint;
  // Written even when rank 0 may go on: a rank not allowed to waits for it.
  store.set("build/verdict", text_bytes(verdict));
  if (me.allow_mixed_builds) {
    spdlog::warn("{}; running anyway, as DTRAIN_ALLOW_MIXED_BUILDS=1 asks", verdict);
    return;
  }
  std::vector<std::string> read_keys;
  for (int r = 1; r < me.world_size; ++r) {
    read_keys.push_back("build/read/" + std::to_string(r));
  }
  try {
    store.wait(read_keys, std::min(me.timeout, std::chrono::milliseconds(60'000)));
  } catch (const StoreError&) {
    // A rank that never read it fails anyway: on the store it loses.
  }
  throw Error(verdict + advice);
}

}  // namespace

void check_one_build(Store& store, const MemberOptions& me) {
  try {
    compare_builds(store, me);
  } catch (const StoreError& e) {
    // Rank 0 gone, or its verdict never came.
    throw CollectiveError("init_process_group: rank " + std::to_string(me.rank) +
                          " could not learn from the store whether every rank runs the same "
                          "build of dtrain (" +
                          e.what() + ")");
  }
}

}  // namespace dtrain::dist
