// A run's settings as a YAML file that replays it: every flag of the
// program's FlagTable with its value once parsed, keyed by the flag's long
// name without the dashes ("epochs: 20", "amp: bf16", switches true or
// false). The Trainer writes one beside its --csv report (rank 0 only;
// nothing without a --csv), and `--config FILE` reads one back: flags given
// on the command line beside it win over the file's values, as CLI11's
// config files do (the file is read through a CLI::Config that speaks YAML).
//
//   FlagTable flags(app);
//   add_trainer_flags(flags, options);  // calls add_config_flag
//   ... parse ...
//   write_run_config(flags, "out/report.csv");  // out/report.config.yaml
//
// A key that names no flag the file may set, or a value its flag refuses,
// is a bad flag (CLI::ConfigError): one line naming the file and the key.
// Needs yaml-cpp: a build without it refuses --config and writes no file,
// saying why.
#pragma once

#include <string>
#include <vector>

#include "dtrain/train/flag_table.h"

namespace dtrain::train {

// Adds --config FILE to the table's program. The flags named in
// `not_replayed` ("--rank") are neither written to a run config nor read
// from one (they become configurable(false)); each must already be added.
// The table must outlive its app's parsing.
void add_config_flag(FlagTable& flags, const std::vector<std::string>& not_replayed);

// Where the run config of a report goes: its extension replaced by
// ".config.yaml" ("out/report.csv" -> "out/report.config.yaml").
std::string run_config_path(const std::string& csv);

// The YAML text of the table's config_settings(), in the order added.
std::string run_config_yaml(const FlagTable& flags);

// Writes run_config_yaml(flags) to run_config_path(csv), atomically;
// nothing when `csv` is empty. Throws dtrain::IOError naming the report
// where it cannot be written (detail::check_writable), else the config.
void write_run_config(const FlagTable& flags, const std::string& csv);

}  // namespace dtrain::train
