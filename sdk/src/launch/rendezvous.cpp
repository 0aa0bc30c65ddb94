#include "dtrain/launch/rendezvous.h"

#include <algorithm>
#include <sstream>
#include <thread>

#include "dtrain/util/build_info.h"
#include "dtrain/util/errors.h"

namespace dtrain::launch {

namespace {

using Clock = std::chrono::steady_clock;

std::string text_of(const store::Bytes& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

store::Bytes bytes_of(const std::string& text) {
  return store::Bytes(text.begin(), text.end());
}

std::vector<std::string> lines_of(const std::string& text, std::size_t count) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (lines.size() + 1 < count && std::getline(in, line)) {
    lines.push_back(line);
  }
  // The last field takes the rest, newlines and all.
  std::string rest;
  std::getline(in, rest, '\0');
  lines.push_back(rest);
  return lines;
}

int to_int(const std::string& text, const std::string& what) {
  try {
    std::size_t used = 0;
    const int value = std::stoi(text, &used);
    if (used == text.size()) {
      return value;
    }
  } catch (const std::exception&) {
  }
  throw Error("rendezvous store: malformed " + what + " '" + text + "'");
}

}  // namespace

std::string encode(const NodeInfo& info) {
  return info.addr + "\n" + std::to_string(info.master_port) + "\n" + std::to_string(info.nproc) +
         "\n" + std::to_string(info.node_rank) + "\n" + (info.store_host ? "1" : "0") + "\n" +
         info.host + "\n" + info.build;
}

NodeInfo decode_node_info(const std::string& text) {
  // The build came last, after the host: an older record's build is empty.
  const auto fields = lines_of(text, 7);
  NodeInfo info;
  info.addr = fields[0];
  info.master_port = static_cast<std::uint16_t>(to_int(fields[1], "node port"));
  info.nproc = to_int(fields[2], "node worker count");
  info.node_rank = to_int(fields[3], "node rank");
  info.store_host = to_int(fields[4], "store host flag") != 0;
  info.host = fields[5];
  info.build = fields[6];
  return info;
}

std::optional<std::string> builds_disagreement(const std::vector<NodeInfo>& nodes) {
  // Each build with its nodes, in the order of their lowest group rank.
  std::vector<std::pair<std::string, std::string>> holders;
  for (std::size_t group = 0; group < nodes.size(); ++group) {
    const std::string& build = nodes[group].build;
    auto held = std::find_if(holders.begin(), holders.end(),
                             [&](const auto& holder) { return holder.first == build; });
    if (held == holders.end()) {
      holders.push_back({build, ""});
      held = std::prev(holders.end());
    }
    held->second += (held->second.empty() ? "" : ", ") + std::string("node ") +
                    std::to_string(group) + " (" + nodes[group].host + ")";
  }
  if (holders.size() < 2) {
    return std::nullopt;
  }
  std::string text = "the nodes' dtrun agents run different builds of dtrain: ";
  for (std::size_t i = 0; i < holders.size(); ++i) {
    const std::string& build = holders[i].first;
    text += (i == 0 ? "" : "; ") + holders[i].second + " " +
            (build.empty() ? std::string("an older dtrun, which does not say its build")
                           : "\"" + build + "\"");
  }
  return text + ". " + util::kSameBuildAdvice;
}

const char* kind_name(Outcome::Kind kind) {
  switch (kind) {
    case Outcome::Kind::kFailed:
      return "failed";
    case Outcome::Kind::kLost:
      return "lost";
    case Outcome::Kind::kRejoin:
      return "rejoin";
    case Outcome::Kind::kDone:
      return "done";
    case Outcome::Kind::kFatal:
      return "fatal";
  }
  return "?";
}

std::string encode(const Outcome& outcome) {
  return std::string(kind_name(outcome.kind)) + "\n" + std::to_string(outcome.next_restarts) +
         "\n" + outcome.text;
}

Outcome decode_outcome(const std::string& text) {
  const auto fields = lines_of(text, 3);
  Outcome outcome;
  bool known = false;
  for (auto kind : {Outcome::Kind::kFailed, Outcome::Kind::kLost, Outcome::Kind::kRejoin,
                    Outcome::Kind::kDone, Outcome::Kind::kFatal}) {
    if (fields[0] == kind_name(kind)) {
      outcome.kind = kind;
      known = true;
    }
  }
  DTRAIN_CHECK(known, "rendezvous store: malformed round outcome '", fields[0], "'");
  outcome.next_restarts = to_int(fields[1], "restart count");
  outcome.text = fields[2];
  return outcome;
}

int Membership::world_size() const {
  int total = 0;
  for (const auto& node : nodes) {
    total += node.nproc;
  }
  return total;
}

int Membership::first_rank(int group) const {
  int rank = 0;
  for (int g = 0; g < group; ++g) {
    rank += nodes[static_cast<std::size_t>(g)].nproc;
  }
  return rank;
}

Rendezvous::Rendezvous(std::shared_ptr<store::Store> store, RendezvousSettings settings)
    : store_(std::move(store)), settings_(settings) {}

std::string Rendezvous::key(int round, const std::string& name) const {
  return "round/" + std::to_string(round) + "/" + name;
}

std::int64_t Rendezvous::add(int round, const std::string& name, std::int64_t delta) {
  return store_->add(key(round, name), delta);
}

std::string Rendezvous::first(int round, const std::string& name, const std::string& value) {
  return text_of(store_->compare_set(key(round, name), {}, bytes_of(value)));
}

std::optional<std::string> Rendezvous::read(int round, const std::string& name) {
  const std::string full = key(round, name);
  if (!store_->check({full})) {
    return std::nullopt;
  }
  return text_of(store_->get(full));
}

std::optional<Outcome> Rendezvous::outcome(int round) {
  const auto text = read(round, "outcome");
  if (!text) {
    return std::nullopt;
  }
  return decode_outcome(*text);
}

Outcome Rendezvous::settle(int round, const Outcome& proposed) {
  const std::string mine = encode(proposed);
  const std::string held = first(round, "outcome", mine);
  if (held == mine) {
    // Only a hint for agents arriving later (newest_open_round checks outcomes anyway).
    store_->set("latest", std::to_string(round + 1));
  }
  return decode_outcome(held);
}

int Rendezvous::waiting(int round, int members) {
  return static_cast<int>(add(round, "joined", 0)) - members;
}

int Rendezvous::newest_open_round() {
  int round = 0;
  if (store_->check({"latest"})) {
    // The newest round that had an outcome, so a job's final outcome is seen.
    round = std::max(0, to_int(text_of(store_->get("latest")), "latest round") - 1);
  }
  return round;
}

int Rendezvous::restarts_of(int round) {
  if (round == 0) {
    return 0;
  }
  const auto previous = outcome(round - 1);
  return previous ? previous->next_restarts : 0;
}

bool Rendezvous::try_close(int round, int count) {
  return first(round, "closed", std::to_string(count)) == std::to_string(count);
}

int Rendezvous::wait_for_members(int round, const std::function<bool()>& interrupted) {
  const auto joined_at = Clock::now();
  std::optional<Clock::time_point> min_reached_at;
  while (true) {
    if (interrupted()) {
      throw Interrupted{};
    }
    if (const auto closed = read(round, "closed")) {
      DTRAIN_CHECK(*closed != "timeout", "rendezvous round ", round, ": fewer than ",
                   settings_.nnodes.min, " node(s) (--nnodes ", settings_.nnodes.min, ":",
                   settings_.nnodes.max, ") joined within the join timeout of ",
                   settings_.join_timeout.count() / 1000.0,
                   " s (--rdzv-conf join_timeout=SECONDS)");
      return to_int(*closed, "member count");
    }
    const int joined = static_cast<int>(add(round, "joined", 0));
    const auto now = Clock::now();
    if (joined >= settings_.nnodes.max) {
      try_close(round, settings_.nnodes.max);
      continue;
    }
    if (joined >= settings_.nnodes.min && !settings_.order_by_node_rank) {
      if (!min_reached_at) {
        min_reached_at = now;
      }
      if (now - *min_reached_at >= settings_.last_call_timeout) {
        try_close(round, joined);
        continue;
      }
    } else if (now - joined_at >= settings_.join_timeout) {
      first(round, "closed", "timeout");
      continue;
    }
    std::this_thread::sleep_for(settings_.poll_interval);
  }
}

Membership Rendezvous::membership_of(int round, int members, int ticket) {
  Membership membership;
  membership.round = round;
  membership.restarts = restarts_of(round);
  std::vector<std::string> keys;
  for (int t = 0; t < members; ++t) {
    keys.push_back(key(round, "node/" + std::to_string(t)));
  }
  try {
    store_->wait(keys, settings_.join_timeout);
  } catch (const store::StoreTimeoutError& e) {
    // An agent took a ticket and vanished before writing who it is.
    throw Error("rendezvous round " + std::to_string(round) +
                ": a node joined but never described itself (" + e.what() + ")");
  }
  std::vector<std::pair<NodeInfo, int>> nodes;  // with their tickets
  for (int t = 0; t < members; ++t) {
    nodes.emplace_back(decode_node_info(text_of(store_->get(keys[t]))), t);
  }
  if (settings_.order_by_node_rank) {
    std::sort(nodes.begin(), nodes.end(),
              [](const auto& a, const auto& b) { return a.first.node_rank < b.first.node_rank; });
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      DTRAIN_CHECK(nodes[i].first.node_rank == static_cast<int>(i),
                   "static rendezvous: expected --node-rank 0..", nodes.size() - 1,
                   " once each, but node rank ", nodes[i].first.node_rank,
                   " was given to more than one node (hosts ", nodes[i].first.host,
                   i > 0 ? " and " + nodes[i - 1].first.host : std::string(), ")");
    }
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    membership.nodes.push_back(nodes[i].first);
    if (nodes[i].second == ticket) {
      membership.group_rank = static_cast<int>(i);
    }
  }
  return membership;
}

JoinResult Rendezvous::join(const std::function<NodeInfo()>& make_info,
                            const std::function<bool()>& interrupted) {
  int round = newest_open_round();
  while (true) {
    // Skip rounds that ended; a job that ended admits no one.
    while (const auto ended = outcome(round)) {
      if (ended->final()) {
        return {std::nullopt, ended, round};
      }
      ++round;
    }
    const int ticket = static_cast<int>(add(round, "joined", 1)) - 1;
    store_->set(key(round, "node/" + std::to_string(ticket)), encode(make_info()));
    const int members = wait_for_members(round, interrupted);
    if (ticket < members) {
      return {membership_of(round, members, ticket), std::nullopt, round};
    }
    // Admitted to no round yet: wait for this one to end, then join the next.
    std::optional<Outcome> ended;
    while (!(ended = outcome(round))) {
      if (interrupted()) {
        throw Interrupted{};
      }
      std::this_thread::sleep_for(settings_.poll_interval);
    }
    if (ended->final()) {
      return {std::nullopt, ended, round};
    }
  }
}

}  // namespace dtrain::launch
