#include "membership.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "dtrain/dist/setting.h"
#include "dtrain/dist/types.h"
#include "dtrain/store/socket.h"
#include "dtrain/util/build_info.h"
#include "dtrain/util/errors.h"

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
    token = store::net::host_name() + ":" + std::to_string(owner) + ":" + std::to_string(seed());
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

using Clock = std::chrono::steady_clock;

// Note [A conflict at rendezvous]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A process that finds the job's ranks in conflict (another world size
// already recorded, its rank already claimed by another process) is the only
// one that sees it: the others just wait for a claim that will never come.
// So it records the conflict in the store before it raises, and every
// process waiting for its peers' claims checks for that record between
// waits of at most kConflictPoll, raising the same message -- at once,
// rather than blaming a rank that never joined when the timeout (30 min by
// default) is over. A process hosting the store (rank 0's TcpStore) that
// raises a conflict, its own or one it read, first waits for the others to
// have read it, as its store goes with it.
constexpr char kConflictKey[] = "conflict";
// How many processes wait for their peers' claims now (see raise_conflict).
constexpr char kJoiningKey[] = "joining";
constexpr std::chrono::milliseconds kConflictPoll{1000};

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

// The record of a conflict: `what` disagreed.
std::string conflict_text(const MemberOptions& me, const std::string& what) {
  return "the job's ranks disagree: " + what + me.stale_hint;
}

// Note [A conflict at rendezvous]: raises `conflict` on this rank, after
// recording it when `publish` (the first record stays). A process that
// hosts the store takes it along when it fails, so it first lets the
// processes still waiting for their peers read the record (or a minute
// pass): they would report the lost store instead.
[[noreturn]] void raise_conflict(Store& store, const MemberOptions& me, const std::string& conflict,
                                 bool publish) {
  try {
    if (publish) {
      store.compare_set(kConflictKey, {}, text_bytes(conflict));
    }
    const auto deadline = Clock::now() + std::min(me.timeout, std::chrono::milliseconds(60'000));
    while (me.hosts_store && store.add(kJoiningKey, 0) > 0 && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } catch (const StoreError& e) {
    spdlog::warn("init_process_group: could not tell the other ranks that {} ({})", conflict,
                 e.what());
  }
  throw Error("init_process_group: rank " + std::to_string(me.rank) + ": " + conflict);
}

// The rank of the first process that brought `world_size`, or "" when no
// process of this job recorded it (a previous job's record).
std::string first_rank_with_world_size(Store& store, const std::string& world_size) {
  const std::string key = "world_size/first_rank/" + world_size;
  return store.check({key}) ? bytes_text(store.get(key)) : std::string();
}

// Counts this process among those joining while it exists, so that a
// store's host raising a conflict knows whom to wait for. It must count
// from before the process's first record: a host that finds the conflict
// as soon as that record appears would otherwise see nobody to wait for
// and take the store away while this process waits on it.
class Joining {
 public:
  explicit Joining(Store& store) : store_(store) { store_.add(kJoiningKey, 1); }
  ~Joining() {
    try {
      store_.add(kJoiningKey, -1);
    } catch (const StoreError&) {
      // The store is gone: nobody is left to wait for this process.
    }
  }
  Joining(const Joining&) = delete;
  Joining& operator=(const Joining&) = delete;

 private:
  Store& store_;
};

// Waits for every rank's claim (`keys`) in slices (10 ms, doubling up to
// kConflictPoll), checking between them for a conflict's record. Returns
// the record, or nullopt once every rank is claimed; throws
// StoreTimeoutError when claims are still missing after me.timeout.
std::optional<std::string> wait_for_claims(Store& store, const MemberOptions& me,
                                           const std::vector<std::string>& keys) {
  const auto deadline = Clock::now() + me.timeout;
  std::chrono::milliseconds slice(10);
  for (;;) {
    if (store.check({kConflictKey})) {
      return bytes_text(store.get(kConflictKey));
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      throw StoreTimeoutError("rank claims still missing");
    }
    try {
      store.wait(keys, std::min(slice, left));
      return std::nullopt;
    } catch (const StoreTimeoutError&) {
      slice = std::min(slice * 2, kConflictPoll);
    }
  }
}

// A conflict this process found, or read from the store.
struct Conflict {
  std::string text;
  bool found_here;  // so this process records it
};

// Records this process's world size, build and rank and waits for every
// rank's claim; returns the conflict that stops the job, if any.
std::optional<Conflict> join(Store& store, const MemberOptions& me) {
  const int rank = me.rank;
  const int world_size = me.world_size;
  const std::string size_text = std::to_string(world_size);
  // Recorded before the world size itself, so a process that finds another
  // size can name a rank that brought it.
  store.compare_set("world_size/first_rank/" + size_text, {}, text_bytes(std::to_string(rank)));
  const std::string agreed = bytes_text(store.compare_set("world_size", {}, text_bytes(size_text)));
  if (agreed != size_text) {
    const std::string first = first_rank_with_world_size(store, agreed);
    const std::string what = "rank " + std::to_string(rank) + " was started with world size " +
                             size_text +
                             (first.empty() ? ", but the store holds world size " + agreed +
                                                  " (from another rank, or a previous "
                                                  "job)"
                                            : ", rank " + first + " with world size " + agreed) +
                             "; start every process with the same world size";
    return Conflict{conflict_text(me, what), /*found_here=*/true};
  }
  record_build(store, me);
  const std::string token = process_token();
  const std::string owner = bytes_text(store.compare_set(rank_key(rank), {}, text_bytes(token)));
  if (owner != token) {
    const std::string what = "rank " + std::to_string(rank) + " was claimed twice: by process " +
                             owner + " and by process " + token +
                             "; every process needs its own rank";
    return Conflict{conflict_text(me, what), /*found_here=*/true};
  }
  std::vector<std::string> keys;
  for (int r = 0; r < world_size; ++r) {
    keys.push_back(rank_key(r));
  }
  const auto timeout = me.timeout;
  std::optional<std::string> conflict;
  try {
    try {
      conflict = wait_for_claims(store, me, keys);
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
  if (conflict) {
    return Conflict{*conflict, /*found_here=*/false};
  }
  return std::nullopt;
}

}  // namespace

void check_membership(Store& store, const MemberOptions& me) {
  std::optional<Conflict> conflict;
  {
    const Joining joining(store);
    conflict = join(store, me);
  }
  // No longer joining: a host raising the conflict waits for the others only.
  if (conflict) {
    raise_conflict(store, me, conflict->text, conflict->found_here);
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
