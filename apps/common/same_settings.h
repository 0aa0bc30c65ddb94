// The settings every process of a training job must share, compared when
// the job starts. Flags given differently to some processes (a typo in one
// node's command, an old script on another) would otherwise train on
// silently with mismatched hyper-parameters, or leave the others waiting
// in a collective that one process never reaches, until the timeout.
#pragma once

#include <string>
#include <vector>

namespace dtrain::apps {

struct Job;

struct Setting {
  std::string name;   // a flag ("--epochs") or a quantity ("training clouds")
  std::string value;  // as text, the same for equal values
};

// Throws dtrain::Error on every rank when a setting differs between the
// processes, naming each such setting with its values and the ranks that
// hold them. Alone: nothing to compare. Every rank must call it.
void check_same_settings(const Job& job, const std::vector<Setting>& settings);

// What differs between the ranks' settings (indexed by rank), one entry
// per setting: `--epochs: "5" on ranks 0-2, "3" on rank 3`; a setting a
// rank lacks has the value "(none)". Empty when all agree.
std::vector<std::string> settings_disagreements(const std::vector<std::vector<Setting>>& per_rank);

}  // namespace dtrain::apps
