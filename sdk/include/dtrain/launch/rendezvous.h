// Rendezvous: how the agents of a job agree, round after round, on who
// takes part and in which order, through a shared Store.
//
// Note [Rounds]: the job is a sequence of rounds 0, 1, 2, ... Each agent
// joins the newest round that has no outcome yet by incrementing its
// "joined" counter (the counter's value is the agent's ticket) and writing
// its NodeInfo under the ticket. Any agent may close the round: with
// compare_set on "closed", to the number of tickets admitted, as soon as
// MAX agents joined, or MIN have and no one else came within the last-call
// timeout. Tickets below that number take part; later tickets wait for the
// next round. The same compare_set settles a round's end: the first agent
// to write "outcome" decides whether the job restarts after a failure, is
// re-formed to admit waiting agents, is done, or has failed for good; the
// outcome also carries the next round's restart count, so every agent
// agrees on it without a separate counter. Waiting agents count as
// "joined" past the closed number, which is how running agents see them.
//
// Every call may throw StoreError when the store is gone, and join()
// throws dtrain::Error when fewer than MIN agents joined in time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dtrain/launch/launch_options.h"
#include "dtrain/store/store.h"

namespace dtrain::launch {

// What an agent tells the others about its node.
struct NodeInfo {
  std::string addr;               // where other nodes reach it
  std::uint16_t master_port = 0;  // a free port, used when this node is group rank 0
  int nproc = 1;
  int node_rank = 0;        // --node-rank, orders nodes in a static rendezvous
  std::string host;         // host name, for messages
  bool store_host = false;  // this agent hosts the rendezvous store
  // The agent's util::build_info().identity(); empty from a dtrun that
  // predates it (its record has one line fewer).
  std::string build{};
};
std::string encode(const NodeInfo& info);
NodeInfo decode_node_info(const std::string& text);

// When a round's nodes run different builds of dtrain, what to tell the
// user: each build with the nodes (group rank and host) that run it.
// std::nullopt when all agree. A job of mixed builds may fail in ways that
// no restart mends, so the agents end it at once (Note [One build per job]
// in src/dist/membership.h says why builds must match).
std::optional<std::string> builds_disagreement(const std::vector<NodeInfo>& nodes);

struct Outcome {
  enum class Kind { kFailed, kLost, kRejoin, kDone, kFatal };
  Kind kind = Kind::kDone;
  int next_restarts = 0;  // the restart count of the round after this one
  std::string text;       // what happened, for logs
  bool final() const { return kind == Kind::kDone || kind == Kind::kFatal; }
};
std::string encode(const Outcome& outcome);
Outcome decode_outcome(const std::string& text);
const char* kind_name(Outcome::Kind kind);

// The agreed members of one round.
struct Membership {
  int round = 0;
  int restarts = 0;             // restarts of the job before this round
  std::vector<NodeInfo> nodes;  // by group rank
  int group_rank = 0;           // this agent's
  int world_size() const;
  int first_rank(int group_rank) const;  // global rank of that node's local rank 0
};

// join()'s answer: a membership, or the job's final outcome when it ended
// before this agent was admitted.
struct JoinResult {
  std::optional<Membership> membership;
  std::optional<Outcome> final_outcome;
  int round = 0;
};

struct RendezvousSettings {
  NodeRange nnodes;
  bool order_by_node_rank = false;  // the static backend
  std::chrono::milliseconds join_timeout{std::chrono::seconds(600)};
  std::chrono::milliseconds last_call_timeout{std::chrono::seconds(30)};
  std::chrono::milliseconds poll_interval{100};
};

class Rendezvous {
 public:
  // `store` holds only this job's keys (a PrefixStore on the run id).
  Rendezvous(std::shared_ptr<store::Store> store, RendezvousSettings settings);

  // Joins the newest open round (Note [Rounds]) and waits until a round
  // admits this agent, or the job ends. `make_info` is called per attempt
  // (a fresh free port each time). `interrupted` is polled while waiting;
  // when it returns true join() throws Interrupted.
  JoinResult join(const std::function<NodeInfo()>& make_info,
                  const std::function<bool()>& interrupted);

  // The round's outcome, if one was written.
  std::optional<Outcome> outcome(int round);
  // Writes the outcome unless one exists; returns the one that holds.
  Outcome settle(int round, const Outcome& proposed);
  // Agents that joined `round` after it closed (they wait for the next one).
  int waiting(int round, int members);

  // Per-round counters, by key: "succeeded", "acked", "hb/<group rank>".
  std::int64_t add(int round, const std::string& key, std::int64_t delta);
  // Writes `value` under the key unless set; returns the value that holds.
  std::string first(int round, const std::string& key, const std::string& value);
  std::optional<std::string> read(int round, const std::string& key);

  struct Interrupted {};

 private:
  std::string key(int round, const std::string& name) const;
  int newest_open_round();
  int restarts_of(int round);
  bool try_close(int round, int count);
  // Until `round` closes (closing it when the nodes it waits for have
  // joined or its timeouts passed): its member count.
  int wait_for_members(int round, const std::function<bool()>& interrupted);
  // The membership of `round`'s first `members` tickets, in node-rank order
  // for the static backend, as the holder of `ticket` sees it.
  Membership membership_of(int round, int members, int ticket);

  std::shared_ptr<store::Store> store_;
  RendezvousSettings settings_;
};

}  // namespace dtrain::launch
