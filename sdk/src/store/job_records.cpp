#include "dtrain/store/job_records.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <sstream>

namespace dtrain::store {

namespace {

constexpr const char* kFailureTag = "dtrain-failure-record 1";
constexpr const char* kProgressTag = "dtrain-progress-record 1";

// "field value" lines after the tag; the field named `last`, when given,
// comes last and takes the rest of the text, newlines and all.
std::optional<std::map<std::string, std::string>> fields_of(const std::string& text,
                                                            const std::string& tag,
                                                            const std::string& last = "") {
  if (!text.starts_with(tag + "\n")) {
    return std::nullopt;
  }
  std::string head = text.substr(tag.size() + 1);
  std::map<std::string, std::string> fields;
  if (!last.empty()) {
    const std::string marker = "\n" + last + " ";
    const auto at = ("\n" + head).find(marker);
    if (at == std::string::npos) {
      return std::nullopt;
    }
    fields[last] = head.substr(at + marker.size() - 1);
    head = head.substr(0, at);
  }
  std::istringstream in(head);
  for (std::string line; std::getline(in, line);) {
    const auto space = line.find(' ');
    fields[line.substr(0, space)] = space == std::string::npos ? "" : line.substr(space + 1);
  }
  return fields;
}

template <typename T>
bool number(const std::map<std::string, std::string>& fields, const std::string& name, T& out) {
  const auto it = fields.find(name);
  if (it == fields.end()) {
    return false;
  }
  const std::string& text = it->second;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

std::string text(const std::map<std::string, std::string>& fields, const std::string& name) {
  const auto it = fields.find(name);
  return it == fields.end() ? "" : it->second;
}

std::string join(const std::vector<int>& ranks) {
  std::string out;
  for (const int rank : ranks) {
    out += (out.empty() ? "" : ",") + std::to_string(rank);
  }
  return out;
}

std::optional<std::vector<int>> split(const std::string& list) {
  std::vector<int> ranks;
  std::size_t at = 0;
  while (at < list.size()) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    int rank = 0;
    const auto [end, error] = std::from_chars(list.data() + at, list.data() + comma, rank);
    if (error != std::errc() || end != list.data() + comma) {
      return std::nullopt;
    }
    ranks.push_back(rank);
    at = comma + 1;
  }
  return ranks;
}

// One line per field: a value holding a newline would end it early.
std::string one_line(std::string value) {
  for (char& c : value) {
    c = c == '\n' ? ' ' : c;
  }
  return value;
}

}  // namespace

std::string encode(const FailureRecord& record) {
  std::ostringstream out;
  out << kFailureTag << "\nrank " << record.rank << "\ngroup " << one_line(record.group) << "\nseq "
      << record.seq << "\nop " << one_line(record.op) << "\nmissing " << join(record.missing)
      << "\nmessage " << record.message;
  return out.str();
}

std::string encode(const ProgressRecord& record) {
  std::ostringstream out;
  out << kProgressTag << "\nrank " << record.rank << "\ngroup " << one_line(record.group)
      << "\nseq " << record.seq << "\nop " << one_line(record.op) << "\nstate "
      << one_line(record.state) << "\nrecorded " << record.recorded << "\ndump_signal "
      << record.dump_signal << "\npid " << record.pid << "\n";
  return out.str();
}

std::optional<FailureRecord> decode_failure_record(const std::string& encoded) {
  const auto fields = fields_of(encoded, kFailureTag, "message");
  FailureRecord record;
  if (!fields || !number(*fields, "rank", record.rank) || !number(*fields, "seq", record.seq) ||
      !fields->contains("message")) {
    return std::nullopt;
  }
  const auto missing = split(text(*fields, "missing"));
  if (!missing) {
    return std::nullopt;
  }
  record.group = text(*fields, "group");
  record.op = text(*fields, "op");
  record.missing = *missing;
  record.message = text(*fields, "message");
  return record;
}

std::optional<ProgressRecord> decode_progress_record(const std::string& encoded) {
  const auto fields = fields_of(encoded, kProgressTag);
  ProgressRecord record;
  if (!fields || !number(*fields, "rank", record.rank) || !number(*fields, "seq", record.seq) ||
      !number(*fields, "recorded", record.recorded) ||
      !number(*fields, "dump_signal", record.dump_signal) || !number(*fields, "pid", record.pid)) {
    return std::nullopt;
  }
  record.group = text(*fields, "group");
  record.op = text(*fields, "op");
  record.state = text(*fields, "state");
  return record;
}

std::string failure_record_key(int rank) {
  return "failure/" + std::to_string(rank);
}

std::string progress_record_key(int rank) {
  return "progress/" + std::to_string(rank);
}

std::string flight_recorder_key(int rank) {
  return "flight_recorder/" + std::to_string(rank);
}

std::optional<RecordsLocation> records_location() {
  const char* host = std::getenv(kRecordsHostVariable);
  const char* port = std::getenv(kRecordsPortVariable);
  const char* prefix = std::getenv(kRecordsPrefixVariable);
  if (host == nullptr || *host == '\0' || port == nullptr || prefix == nullptr) {
    return std::nullopt;
  }
  RecordsLocation location{host, 0, prefix};
  const std::string port_text = port;
  unsigned value = 0;
  const auto [end, error] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
  if (error != std::errc() || end != port_text.data() + port_text.size() || value == 0 ||
      value > 65535) {
    return std::nullopt;
  }
  location.port = static_cast<std::uint16_t>(value);
  return location;
}

}  // namespace dtrain::store
