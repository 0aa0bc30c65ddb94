// Settings as the processes of a job compare them, and how to say where
// they differ: pure functions on values already gathered, so the
// membership check at rendezvous (one build per job) and
// check_same_settings (dtrain/dist/same_settings.h), a collective, use
// them alike.
#pragma once

#include <string>
#include <vector>

namespace dtrain::dist {

struct Setting {
  std::string name;   // a flag ("--epochs") or a quantity ("training clouds")
  std::string value;  // as text, the same for equal values
};

// What differs between the ranks' settings (indexed by rank), one entry
// per setting: `--epochs: "5" on ranks 0-2, "3" on rank 3`; a setting a
// rank lacks has the value "(none)". Empty when all agree.
std::vector<std::string> settings_disagreements(const std::vector<std::vector<Setting>>& per_rank);

}  // namespace dtrain::dist
