// dtrun's command line, spelled as torchrun spells it (dashes or
// underscores), turned into dtrain::launch::LaunchOptions.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "dtrain/launch/launch_options.h"

namespace dtrain::apps {

// The flags' raw texts, as given.
struct DtrunFlags {
  std::string nnodes = "1:1";
  std::string nproc_per_node = "1";
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string rdzv_backend = "static";
  std::string rdzv_endpoint;
  std::string rdzv_id = "none";
  std::string rdzv_conf;
  bool standalone = false;
  std::string local_addr;
  int max_restarts = 0;
  // Seconds, as text: parse_seconds names the value as given (1e20).
  std::string monitor_interval = "0.1";
  std::string stop_timeout = "10";
  std::string log_dir;
  std::string redirects = "0";
  std::string tee = "0";
  std::string local_ranks_filter;
  bool bind_devices = false;
  bool share_gpu = false;
  bool no_python = false;
  bool module = false;
  std::string start_method = "fork";
  std::string role = "default";
};

// Registers every flag on `app`; the program and its arguments are what
// app.remaining() holds after parsing (CLI11's prefix_command mode).
void add_dtrun_flags(CLI::App& app, DtrunFlags& flags);

// Checks the flags together and builds the options, the workers' command
// line included (worker_command: Python for .py); throws dtrain::Error
// naming the flags that contradict each other, or a program, interpreter
// or --log-dir that is not there. Creates the --log-dir when missing.
launch::LaunchOptions to_launch_options(const CLI::App& app, const DtrunFlags& flags,
                                        std::vector<std::string> program);

}  // namespace dtrain::apps
