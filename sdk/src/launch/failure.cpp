#include "dtrain/launch/failure.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "../dist/timeout_diagnosis.h"

namespace dtrain::launch {

// One field per line; the log tail last, since it may hold newlines itself.
std::string encode(const WorkerFailure& failure) {
  std::ostringstream out;
  out << "worker-failure\n"
      << failure.rank << "\n"
      << failure.local_rank << "\n"
      << failure.group_rank << "\n"
      << failure.host << "\n"
      << failure.status.code << "\n"
      << failure.status.signal << "\n"
      << failure.time_ms << "\n"
      << failure.log_tail;
  return out.str();
}

std::optional<WorkerFailure> decode_failure(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> fields;
  for (int i = 0; i < 8 && std::getline(in, line); ++i) {
    fields.push_back(line);
  }
  if (fields.size() != 8 || fields[0] != "worker-failure") {
    return std::nullopt;
  }
  WorkerFailure failure;
  try {
    failure.rank = std::stoi(fields[1]);
    failure.local_rank = std::stoi(fields[2]);
    failure.group_rank = std::stoi(fields[3]);
    failure.host = fields[4];
    failure.status.code = std::stoi(fields[5]);
    failure.status.signal = std::stoi(fields[6]);
    failure.time_ms = std::stoll(fields[7]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const auto pos = in.tellg();
  failure.log_tail = pos < 0 ? std::string() : text.substr(static_cast<std::size_t>(pos));
  return failure;
}

namespace {

using dist::detail::read_unreached;
using dist::detail::UnreachedCollective;

// Quotes `text` line by line under a heading of the summary.
void quote(std::ostringstream& out, const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    out << "    | " << line << "\n";
  }
}

// Note [Which rank a timeout waited on] (dist/timeout_diagnosis.h): a worker
// whose collective timed out names in its error the ranks that did not
// reach it. The first failure is then a victim, and those ranks are where
// to look.
struct LikelyCause {
  UnreachedCollective collective;
  std::vector<int> reporters;  // the failed ranks that named it
};

// Each collective the failures' outputs name, once, in order of appearance.
std::vector<LikelyCause> likely_causes(const std::vector<WorkerFailure>& failures) {
  std::vector<LikelyCause> causes;
  for (const WorkerFailure& failure : failures) {
    for (UnreachedCollective& collective : read_unreached(failure.log_tail)) {
      auto it = std::find_if(causes.begin(), causes.end(),
                             [&](const LikelyCause& c) { return c.collective == collective; });
      if (it == causes.end()) {
        it = causes.insert(causes.end(), {std::move(collective), {}});
      }
      it->reporters.push_back(failure.rank);
    }
  }
  return causes;
}

std::string format_causes(const std::vector<LikelyCause>& causes) {
  std::ostringstream out;
  for (const LikelyCause& cause : causes) {
    out << "  likely cause: rank(s) " << cause.collective.ranks << " never reached "
        << cause.collective.collective << ", in which rank(s) ";
    for (std::size_t r = 0; r < cause.reporters.size(); ++r) {
      out << (r ? ", " : "") << cause.reporters[r];
    }
    out << " timed out\n";
  }
  return out.str();
}

}  // namespace

std::string format_likely_causes(const std::vector<WorkerFailure>& failures) {
  return format_causes(likely_causes(failures));
}

std::string format_failure_summary(std::vector<WorkerFailure> failures, int restarts,
                                   int max_restarts, const std::map<int, std::string>& tails) {
  std::stable_sort(failures.begin(), failures.end(),
                   [](const auto& a, const auto& b) { return a.time_ms < b.time_ms; });
  const WorkerFailure& failure = failures.front();
  const std::vector<LikelyCause> causes = likely_causes(failures);
  std::ostringstream out;
  out << "dtrun: job failed after " << restarts << " restart" << (restarts == 1 ? "" : "s")
      << " (--max-restarts " << max_restarts << ")\n"
      << format_causes(causes) << "  first failure: rank " << failure.rank << " (local rank "
      << failure.local_rank << " on node " << failure.group_rank << ", host " << failure.host
      << ") ended with " << failure.status.describe() << "\n";
  if (failure.log_tail.empty()) {
    out << "  its output was empty\n";
  } else {
    out << "  last lines of its output:\n";
    quote(out, failure.log_tail);
  }
  for (const WorkerFailure& other : failures) {
    if (&other != &failure) {
      out << "  also failed: rank " << other.rank << " (local rank " << other.local_rank
          << " on node " << other.group_rank << ", host " << other.host << ") with "
          << other.status.describe() << "\n";
    }
  }
  // The likely causes' own last lines, where this node ran them (and they
  // are not the first failure, quoted above).
  std::vector<int> named;
  for (const LikelyCause& cause : causes) {
    named.insert(named.end(), cause.collective.global_ranks.begin(),
                 cause.collective.global_ranks.end());
  }
  std::sort(named.begin(), named.end());
  named.erase(std::unique(named.begin(), named.end()), named.end());
  for (const int rank : named) {
    const auto tail = tails.find(rank);
    if (rank == failure.rank || tail == tails.end()) {
      continue;
    }
    if (tail->second.empty()) {
      out << "  rank " << rank << " (a likely cause) wrote nothing\n";
    } else {
      out << "  last lines of rank " << rank << "'s output (a likely cause):\n";
      quote(out, tail->second);
    }
  }
  return out.str();
}

std::string last_lines(const std::string& text, int lines) {
  std::size_t end = text.size();
  while (end > 0 && text[end - 1] == '\n') {
    --end;
  }
  std::size_t start = end;
  int seen = 0;
  while (start > 0) {
    if (text[start - 1] == '\n' && ++seen == lines) {
      break;
    }
    --start;
  }
  return text.substr(start, end - start);
}

namespace {

// Where the line holding text[at] starts.
std::size_t line_start_of(const std::string& text, std::size_t at) {
  const std::size_t newline = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
  return newline == std::string::npos ? 0 : newline + 1;
}

// Where a crash trace whose "fatal signal" header has its ']' at `header`
// starts: at the header's line, or above it at the report of an uncaught
// exception that caused the abort ("[rank 1/local 1] terminate: uncaught
// ..." and its explainers' lines under the same prefix, util/crash_trace.h),
// which says what went wrong where the frames only say where.
std::size_t crash_trace_start(const std::string& text, std::size_t header) {
  const std::size_t header_line = line_start_of(text, header);
  const std::string prefix = text.substr(header_line, header - header_line + 1);
  const std::string report = prefix + " terminate";
  constexpr int kMostReportLines = 9;  // the report and at most 8 explainers
  std::size_t line = header_line;
  for (int back = 0; back < kMostReportLines && line > 0; ++back) {
    line = line_start_of(text, line - 1);
    if (text.compare(line, prefix.size(), prefix) != 0) {
      break;
    }
    if (text.compare(line, report.size(), report) == 0) {
      return line;
    }
  }
  return header_line;
}

}  // namespace

std::string failure_tail(const std::string& text, int lines, int trace_lines) {
  std::string tail = last_lines(text, lines);
  const std::size_t header = text.rfind("] fatal signal ");
  if (header == std::string::npos) {
    return tail;
  }
  const std::string trace = text.substr(crash_trace_start(text, header));
  if (trace.size() <= tail.size()) {
    return tail;  // the last lines hold the whole trace already
  }
  // The first trace_lines lines of the trace.
  std::size_t end = 0;
  for (int kept = 0; kept < trace_lines && end < trace.size(); ++kept) {
    const std::size_t newline = trace.find('\n', end);
    end = newline == std::string::npos ? trace.size() : newline + 1;
  }
  while (end > 0 && trace[end - 1] == '\n') {
    --end;
  }
  return trace.substr(0, end);
}

}  // namespace dtrain::launch
