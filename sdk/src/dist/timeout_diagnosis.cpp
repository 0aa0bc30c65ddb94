// Note [Which rank a timeout waited on] (timeout_diagnosis.h).
#include "timeout_diagnosis.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

namespace dtrain::dist::detail {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::string_view kGlobalRank = " (global rank ";

// How long the caller waits past the grace for a store call in flight to
// come back, before saying the store does not answer.
constexpr milliseconds kAnswerMargin{500};
constexpr milliseconds kPollInterval{50};

struct Report {
  bool present = false;
  std::int64_t seq = 0;
  std::string op;
};

// What the store thread found so far; shared with the caller, who may stop
// waiting for it (the thread then finishes or stays blocked on its own).
struct Findings {
  std::mutex mutex;
  std::condition_variable cv;
  bool reported = false;  // our own report is in the store
  bool done = false;
  std::string store_error;
  std::vector<Report> reports;
};

std::string key(int rank) {
  return "timeout/" + std::to_string(rank);
}

Report parse(const std::string& value) {
  Report report;
  report.present = true;
  const auto space = value.find(' ');
  try {
    report.seq = std::stoll(value.substr(0, space));
  } catch (const std::exception&) {
    report.seq = -1;
  }
  report.op = space == std::string::npos ? "?" : value.substr(space + 1);
  return report;
}

void collect(const std::shared_ptr<Store>& store, int rank, int size, std::int64_t seq,
             const std::string& op, Clock::time_point deadline,
             const std::shared_ptr<Findings>& findings) {
  try {
    store->set(key(rank), std::to_string(seq) + " " + op);
    {
      std::lock_guard<std::mutex> lock(findings->mutex);
      findings->reported = true;
    }
    std::vector<bool> seen(size, false);
    seen[rank] = true;
    while (true) {
      for (int r = 0; r < size; ++r) {
        if (!seen[r] && store->check({key(r)})) {
          Report report = parse(store->get_string(key(r)));
          seen[r] = true;
          std::lock_guard<std::mutex> lock(findings->mutex);
          findings->reports[r] = std::move(report);
        }
      }
      const auto now = Clock::now();
      if (std::all_of(seen.begin(), seen.end(), [](bool s) { return s; }) || now >= deadline) {
        break;
      }
      std::this_thread::sleep_for(std::min<Clock::duration>(kPollInterval, deadline - now));
    }
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(findings->mutex);
    findings->store_error = e.what();
  }
  {
    std::lock_guard<std::mutex> lock(findings->mutex);
    findings->done = true;
  }
  findings->cv.notify_all();
}

// Group ranks, each with its global rank where that differs (new_group).
std::string join_ranks(const std::vector<int>& ranks, const std::vector<int>& global_ranks) {
  std::string text;
  for (int r : ranks) {
    text += (text.empty() ? "" : ", ") + std::to_string(r);
    if (global_ranks[r] != r) {
      text += std::string(kGlobalRank) + std::to_string(global_ranks[r]) + ")";
    }
  }
  return text;
}

}  // namespace

milliseconds diagnosis_grace(milliseconds timeout) {
  return std::clamp(timeout, milliseconds(0), milliseconds(std::chrono::seconds(2)));
}

Diagnosis diagnose_timeout(const std::shared_ptr<Store>& store, const std::string& group, int rank,
                           const std::vector<int>& global_ranks, std::int64_t seq,
                           const std::string& op, milliseconds grace) {
  const int size = static_cast<int>(global_ranks.size());
  if (store == nullptr || size <= 1 || rank < 0 || rank >= size) {
    return {};
  }
  auto findings = std::make_shared<Findings>();
  findings->reports.resize(size);
  findings->reports[rank] = {true, seq, op};
  const auto deadline = Clock::now() + grace;
  // Detached: a store hosted by a stopped process may block a call for long,
  // and the caller must raise in bounded time; the thread owns what it uses.
  try {
    std::thread(collect, store, rank, size, seq, op, deadline, findings).detach();
  } catch (const std::exception& e) {
    return {"; could not look for the ranks it waited on: " + std::string(e.what()), {}};
  }

  std::unique_lock<std::mutex> lock(findings->mutex);
  findings->cv.wait_until(lock, deadline + kAnswerMargin, [&] { return findings->done; });
  const std::string label = op + " (#" + std::to_string(seq) + " on group '" + group + "')";
  std::string store_trouble;
  if (!findings->done) {
    store_trouble = "the store did not answer within " +
                    std::to_string((grace + kAnswerMargin).count()) + " ms";
  } else if (!findings->store_error.empty()) {
    store_trouble = "the store failed: " + findings->store_error;
  }
  if (!findings->reported) {
    return {"; could not look for the ranks this " + label + " waited on: " + store_trouble, {}};
  }

  std::vector<int> silent;
  std::vector<int> same;
  std::string elsewhere;
  for (int r = 0; r < size; ++r) {
    const Report& report = findings->reports[r];
    if (r == rank) {
      continue;
    } else if (!report.present) {
      silent.push_back(r);
    } else if (report.seq == seq) {
      same.push_back(r);
    } else {
      elsewhere += "; rank " + join_ranks({r}, global_ranks) + " timed out in " + report.op + " #" +
                   std::to_string(report.seq) + " instead";
    }
  }
  std::vector<int> absent;  // silent, or in another collective
  for (int r = 0; r < size; ++r) {
    if (r != rank && std::find(same.begin(), same.end(), r) == same.end()) {
      absent.push_back(r);
    }
  }

  std::string text;
  if (absent.empty()) {
    text = "; every rank of the group reached this " + label + " and timed out in it";
  } else {
    text = "; rank(s) " + join_ranks(absent, global_ranks) + " did not reach this " + label;
  }
  if (!silent.empty()) {
    text += ": rank(s) " + join_ranks(silent, global_ranks) + " reported no timeout within " +
            std::to_string(grace.count()) +
            " ms of this rank's (stopped, hung, dead, or busy outside this group's collectives)";
  }
  text += elsewhere;
  if (!same.empty() && !absent.empty()) {
    text += "; rank(s) " + join_ranks(same, global_ranks) + " timed out in it too";
  }
  if (!store_trouble.empty()) {
    text += " (" + store_trouble + ", so some reports may be missing)";
  }
  Diagnosis diagnosis{std::move(text), {}};
  for (const int r : absent) {
    diagnosis.missing.push_back(global_ranks[r]);
  }
  return diagnosis;
}

}  // namespace dtrain::dist::detail
