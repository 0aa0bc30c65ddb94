#include "dtrain/launch/failure.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <vector>

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

using store::FailureRecord;
using store::ProgressRecord;

// Quotes `text` line by line under a heading of the summary.
void quote(std::ostringstream& out, const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    out << "    | " << line << "\n";
  }
}

// A collective that timed out on some ranks and that others never reached
// (the workers' FailureRecords): those others are where to look.
struct LikelyCause {
  std::string group;
  std::int64_t seq = 0;
  std::string op;
  std::vector<int> missing;
  std::vector<int> reporters;  // the ranks whose record named it
};

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text;
  for (const int rank : ranks) {
    text += (text.empty() ? "" : ", ") + std::to_string(rank);
  }
  return text;
}

std::string collective_text(const std::string& op, std::int64_t seq, const std::string& group) {
  return op + " (#" + std::to_string(seq) + " on group '" + group + "')";
}

// Each collective the records name with ranks missing, once, by rank of the
// first record that named it.
std::vector<LikelyCause> likely_causes(const JobRecords& records) {
  std::vector<FailureRecord> failures = records.failures;
  std::sort(failures.begin(), failures.end(),
            [](const auto& a, const auto& b) { return a.rank < b.rank; });
  std::vector<LikelyCause> causes;
  for (const FailureRecord& record : failures) {
    if (record.missing.empty()) {
      continue;  // every rank reached it: a slow peer, not a missing one
    }
    std::vector<int> missing = record.missing;
    std::sort(missing.begin(), missing.end());
    auto it = std::find_if(causes.begin(), causes.end(), [&](const LikelyCause& c) {
      return c.group == record.group && c.seq == record.seq && c.op == record.op &&
             c.missing == missing;
    });
    if (it == causes.end()) {
      it = causes.insert(causes.end(), {record.group, record.seq, record.op, missing, {}});
    }
    it->reporters.push_back(record.rank);
  }
  return causes;
}

const ProgressRecord* progress_of(const JobRecords& records, int rank) {
  for (const ProgressRecord& progress : records.progress) {
    if (progress.rank == rank) {
      return &progress;
    }
  }
  return nullptr;
}

std::string format_causes(const std::vector<LikelyCause>& causes, const JobRecords& records) {
  std::ostringstream out;
  for (const LikelyCause& cause : causes) {
    out << "  likely cause: rank(s) " << ranks_text(cause.missing) << " never reached "
        << collective_text(cause.op, cause.seq, cause.group) << ", in which rank(s) "
        << ranks_text(cause.reporters) << " timed out\n";
    for (const int rank : cause.missing) {
      if (const ProgressRecord* last = progress_of(records, rank)) {
        out << "    rank " << rank << " was last in "
            << collective_text(last->op, last->seq, last->group) << ", " << last->state
            << " (its flight recorder)\n";
      } else {
        out << "    rank " << rank << " left no flight recorder record\n";
      }
    }
  }
  return out.str();
}

}  // namespace

std::string format_likely_causes(const JobRecords& records) {
  return format_causes(likely_causes(records), records);
}

std::string format_divergence(const JobRecords& records) {
  if (records.progress.empty()) {
    return "";
  }
  std::vector<ProgressRecord> rows = records.progress;
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  const std::vector<LikelyCause> causes = likely_causes(records);
  std::ostringstream out;
  out << "  where the ranks were (each one's last collective, from its flight recorder):\n"
      << "    rank  group         seq  collective                state\n";
  for (const ProgressRecord& row : rows) {
    out << "    " << std::left << std::setw(6) << row.rank << std::setw(12) << row.group
        << std::right << std::setw(5) << row.seq << "  " << std::left << std::setw(26) << row.op
        << row.state;
    for (const LikelyCause& cause : causes) {
      if (std::find(cause.missing.begin(), cause.missing.end(), row.rank) != cause.missing.end()) {
        out << "  <- never reached #" << cause.seq << " on '" << cause.group << "'";
      }
    }
    out << std::right << "\n";
  }
  return out.str();
}

std::string format_failure_summary(std::vector<WorkerFailure> failures, int restarts,
                                   int max_restarts, const JobRecords& records,
                                   const std::map<int, std::string>& tails) {
  std::stable_sort(failures.begin(), failures.end(),
                   [](const auto& a, const auto& b) { return a.time_ms < b.time_ms; });
  const WorkerFailure& failure = failures.front();
  const std::vector<LikelyCause> causes = likely_causes(records);
  std::ostringstream out;
  out << "dtrun: job failed after " << restarts << " restart" << (restarts == 1 ? "" : "s")
      << " (--max-restarts " << max_restarts << ")\n"
      << format_causes(causes, records) << format_divergence(records) << "  first failure: rank "
      << failure.rank << " (local rank " << failure.local_rank << " on node " << failure.group_rank
      << ", host " << failure.host << ") ended with " << failure.status.describe() << "\n";
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
    named.insert(named.end(), cause.missing.begin(), cause.missing.end());
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
