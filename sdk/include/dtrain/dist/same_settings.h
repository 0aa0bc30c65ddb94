// The settings every process of a job must share, compared across the
// ranks. Flags or configuration given differently to some processes (a
// typo in one node's command, an old script on another) would otherwise
// train on silently with mismatched hyper-parameters, or leave the others
// waiting in a collective that one process never reaches, until the
// timeout. torch.distributed leaves this to the user.
//
//   dist::check_same_settings({{"--epochs", std::to_string(epochs)},
//                              {"--lr", fmt::format("{}", lr)}},
//                             "start every process with the same flags");
#pragma once

#include <string>
#include <vector>

#include "dtrain/dist/process_group.h"
#include "dtrain/dist/setting.h"

namespace dtrain::dist {

// Throws dtrain::Error on every rank of `group` (nullptr: the default
// group) when a setting differs between them, naming each such setting with
// its values and the ranks that hold them, then `advice` when not empty.
// A group of one has nothing to compare. Every rank must call it.
void check_same_settings(const std::vector<Setting>& settings, const std::string& advice = "",
                         const ProcessGroupPtr& group = nullptr);

}  // namespace dtrain::dist
