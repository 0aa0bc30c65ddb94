// Lockstep turns for benchmark programs that are compared on one shared
// machine.
//
// Note [Lockstep benchmarks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// On a small shared VM the speed of the machine drifts by 30-50% over
// seconds, so two programs timed one after the other disagree by more than
// the effect measured. In lockstep, every participant (dtrain local, torch
// local, dtrain DDP world 2, ...) is started at once and they take turns:
// one short block of steps each, in a fixed order, round after round. Every
// round holds one block of each participant, taken within a second or two
// of each other, so ratios are taken per round and a drift moves both
// sides of a ratio alike.
//
// The baton: the runner creates one FIFO per participant rank,
// DIR/<name>.<rank>, lists the names in turn order in DIR/order, keeps every
// FIFO open itself (so writes never block and nothing is lost before a
// participant opens its own), and writes "0\n" to the first participant's
// FIFOs. A participant's ranks each read their round number from their
// FIFO, run their block, meet in a barrier, and rank 0 writes the next
// round number to every FIFO of the next participant (the round number
// grows by one after the last participant). Waiting is a poll() on the
// FIFO, so idle participants take no CPU. benchmarks/peers/lockstep.py is
// the same protocol for the Python peers.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace dtrain::bench {

class Lockstep {
 public:
  // spec: "DIR:NAME", or empty for a program that runs alone (every call
  // returns at once). timeout bounds each wait for a turn.
  Lockstep(const std::string& spec, int rank,
           std::chrono::seconds timeout = std::chrono::seconds(600));
  ~Lockstep();
  Lockstep(const Lockstep&) = delete;
  Lockstep& operator=(const Lockstep&) = delete;

  bool active() const { return fifo_fd_ >= 0; }

  // Blocks until this participant's turn in `round`; raises dtrain::Error on
  // a timeout (another participant has likely failed) or a wrong round.
  void wait_turn(int round);

  // After the block (and the participant's own barrier): rank 0 hands the
  // turn to the next participant. Other ranks return at once.
  void pass_turn(int round);

 private:
  std::string dir_;
  std::string name_;
  int rank_ = 0;
  std::chrono::seconds timeout_;
  int fifo_fd_ = -1;
  std::vector<std::string> order_;
};

}  // namespace dtrain::bench
