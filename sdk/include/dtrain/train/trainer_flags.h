// The Trainer's flags (--epochs, --batch-size, --lr, --amp, --device,
// --checkpoint, --rank-weights, ...), declared in a program's FlagTable
// and bound to a TrainerOptions, so research code and dtrain's apps take
// the same command line:
//
//   TrainerOptions options = TrainerOptions().epochs(20).lr(1e-3);  // defaults first
//   FlagTable flags(app);
//   add_trainer_flags(flags, options);
//   ... parse ...
//   Trainer trainer(options, flags);  // the processes compare flags' same_settings()
//
// Ranges are checked by CLI11 as each flag is parsed; combinations
// (option_problem, and --init-method, --rank-weights against the job) once
// all are, each reported as a bad flag before any data is read.
// options.noun() names a sample in help texts, as in "--rank-weights:
// how each epoch's clouds ... are split".
#pragma once

#include <string>
#include <vector>

#include "dtrain/train/flag_table.h"
#include "dtrain/train/trainer_options.h"

namespace dtrain::train {

void add_trainer_flags(FlagTable& flags, TrainerOptions& options);

// The Trainer's flags a plain --help shows (--epochs, --device, ...), with
// `more` of the program's own ("--dataset"); the rest are listed by topic
// (util/cli_help.h). Call once every flag is added.
void add_trainer_help(FlagTable& flags, std::vector<std::string> more);

}  // namespace dtrain::train
