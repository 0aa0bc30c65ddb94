#include "flags.h"

#include <random>

#include <spdlog/spdlog.h>

#include "dtrain/util/cli_checks.h"
#include "dtrain/util/cli_help.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/scheduler_env.h"
#include "program.h"

namespace dtrain::apps {

namespace {

bool given(const CLI::App& app, const std::string& name) {
  return app.get_option(name)->count() > 0;
}

std::string random_run_id() {
  std::random_device seed;
  std::mt19937_64 random(seed());
  const char* digits = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 12; ++i) {
    id += digits[random() % 16];
  }
  return id;
}

// torchrun's static rendezvous meets at --rdzv-endpoint when it is given,
// and drops --master-addr/--master-port without a word; dtrun follows, so
// torchrun command lines run unchanged, but says which values it dropped.
void warn_ignored_master_flags(const CLI::App& app, const DtrunFlags& f,
                               const launch::Endpoint& endpoint) {
  std::vector<std::string> ignored;
  if (given(app, "--master-addr") &&
      launch::parse_host(f.master_addr, "--master-addr") != endpoint.host) {
    ignored.push_back("--master-addr " + f.master_addr);
  }
  if (given(app, "--master-port") && f.master_port != endpoint.port) {
    ignored.push_back("--master-port " + std::to_string(f.master_port));
  }
  if (!ignored.empty()) {
    spdlog::warn(
        "{}{} ignored: the static rendezvous meets at --rdzv-endpoint {}, as under "
        "torchrun; give one or the other",
        ignored.front(), ignored.size() > 1 ? " and " + ignored.back() + " are" : " is",
        f.rdzv_endpoint);
  }
}

// The program and its arguments are no CLI11 option (prefix_command), so
// the usage line names them here.
class DtrunFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string name) const override {
    return "Usage: " + name + " [OPTIONS] PROGRAM [ARGS...]\n";
  }
};

// The usage line, the examples and what workers get.
void describe(CLI::App& app) {
  app.prefix_command(true);
  app.formatter(std::make_shared<DtrunFormatter>());
  app.footer(
      "Examples:\n"
      "  dtrun --standalone --nproc-per-node 4 ./train --epochs 3\n"
      "  dtrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint HOST:29400 \\\n"
      "        --rdzv-id job7 --max-restarts 3 ./train\n"
      "  dtrun --nnodes 2 --node-rank 1 --master-addr HOST --master-port 29500 ./train\n"
      "  dtrun --standalone --nproc-per-node 2 main.py --epochs 3\n"
      "PROGRAM is executed as given, except that NAME.py runs as PYTHON -u NAME.py ARGS (as\n"
      "torchrun runs it; --no-python executes it itself), PYTHON being $PYTHON_EXEC or else\n"
      "python3 on PATH.\n"
      "Flags left out are read from PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK,\n"
      "PET_MASTER_ADDR, PET_MASTER_PORT, PET_RDZV_* and PET_MAX_RESTARTS when set (as torchrun\n"
      "reads them; the PyTorch training operator sets them in its pods).\n"
      "Workers get RANK, LOCAL_RANK, GROUP_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR,\n"
      "MASTER_PORT, TORCHELASTIC_RESTART_COUNT (= DTRUN_RESTART_COUNT) and TORCHELASTIC_RUN_ID.\n"
      "Exit status: 0 when every worker exited 0; 1 when the job failed; 2 for bad flags;\n"
      "128+N after signal N.");
}

// --nnodes .. --local-addr: how nodes meet.
void add_rendezvous_flags(CLI::App& app, DtrunFlags& f) {
  app.option_defaults()->group("Rendezvous");  // CLI11 gives new options the defaults' group
  app.add_option("--nnodes", f.nnodes, "Number of nodes, or MIN:MAX for an elastic job")
      ->capture_default_str()
      ->envname("PET_NNODES");
  app.add_option("--nproc-per-node,--nproc_per_node", f.nproc_per_node,
                 "Workers per node: a number, gpu, cpu or auto")
      ->capture_default_str()
      ->envname("PET_NPROC_PER_NODE");
  app.add_option("--node-rank,--node_rank", f.node_rank,
                 "This node's rank (static rendezvous; 0..nnodes-1)")
      ->capture_default_str()
      ->envname("PET_NODE_RANK");
  app.add_option("--master-addr,--master_addr", f.master_addr,
                 "Address of node rank 0 (static rendezvous); IPv6 as ::1 or [::1]")
      ->capture_default_str()
      ->envname("PET_MASTER_ADDR");
  app.add_option("--master-port,--master_port", f.master_port,
                 "Port of node rank 0's rendezvous store (static rendezvous)")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str()
      ->envname("PET_MASTER_PORT");
  app.add_option("--rdzv-backend,--rdzv_backend", f.rdzv_backend,
                 "Rendezvous: static (fixed nodes, --master-addr), or c10d (a store on "
                 "--rdzv-endpoint; elastic)")
      ->capture_default_str()
      ->envname("PET_RDZV_BACKEND");
  app.add_option("--rdzv-endpoint,--rdzv_endpoint", f.rdzv_endpoint,
                 "HOST:PORT (IPv6: [ADDR]:PORT) of the rendezvous store (c10d); the agent on "
                 "HOST hosts it")
      ->envname("PET_RDZV_ENDPOINT");
  app.add_option("--rdzv-id,--rdzv_id", f.rdzv_id, "Job id; agents with the same id form one job")
      ->capture_default_str()
      ->envname("PET_RDZV_ID");
  app.add_option("--rdzv-conf,--rdzv_conf", f.rdzv_conf,
                 "Rendezvous settings, in seconds: join_timeout=600,last_call_timeout=30,"
                 "heartbeat_timeout=30")
      ->envname("PET_RDZV_CONF");
  app.add_flag("--standalone", f.standalone,
               "Single-node job: a private store on a free port and a random run id");
  app.add_option("--local-addr,--local_addr", f.local_addr,
                 "This node's address as others reach it (default: the address routing to the "
                 "endpoint)");
}

// --max-restarts .. --role: the workers, their output and their devices.
void add_worker_flags(CLI::App& app, DtrunFlags& f) {
  app.option_defaults()->group("Workers");
  app.add_option("--max-restarts,--max_restarts", f.max_restarts,
                 "Group restarts after failures, for the whole job")
      ->check(dtrain::util::non_negative())
      ->capture_default_str()
      ->envname("PET_MAX_RESTARTS");
  app.add_option("--monitor-interval,--monitor_interval", f.monitor_interval,
                 "Seconds between checks of the workers (0.001 to 604800)")
      ->capture_default_str();
  app.add_option("--stop-timeout,--stop_timeout", f.stop_timeout,
                 "Seconds workers get after SIGTERM before SIGKILL (0.001 to 604800)")
      ->capture_default_str();
  app.add_option("--log-dir,--log_dir", f.log_dir,
                 "Directory for one log file per worker: LOG_DIR/RUN_ID/round_N/rank_R.log "
                 "(created when missing)");
  app.add_option("-r,--redirects", f.redirects,
                 "Worker streams to the log file only: 0 none, 1 stdout, 2 stderr, 3 both; or "
                 "per local rank, e.g. 0:1,1:2")
      ->capture_default_str();
  app.add_option("-t,--tee", f.tee,
                 "Worker streams to the log file and the console, lines prefixed with the rank "
                 "(values as --redirects)")
      ->capture_default_str();
  app.add_option("--local-ranks-filter,--local_ranks_filter", f.local_ranks_filter,
                 "Only these local ranks' output reaches the console, e.g. 0,1");
  app.add_flag("--bind-devices,--bind_devices", f.bind_devices,
               "Give each worker one GPU as its CUDA_VISIBLE_DEVICES (by local rank)");
  app.add_flag("--share-gpu,--share_gpu", f.share_gpu,
               "Put every worker on GPU 0, each its own host to NCCL over loopback sockets "
               "(DTRAIN_SHARE_GPU=1): for checking multi-rank code on one GPU, not for speed");
  app.add_flag("--no-python,--no_python", f.no_python,
               "Execute PROGRAM itself even when it ends in .py");
  app.add_flag("-m,--module", f.module,
               "PROGRAM is a Python module: run PYTHON -u -m PROGRAM ARGS (PYTHON: $PYTHON_EXEC, "
               "else python3 on PATH)");
  app.add_option("--start-method,--start_method", f.start_method,
                 "Accepted for torchrun compatibility (dtrun always forks and executes)")
      ->check(CLI::IsMember({"spawn", "fork", "forkserver"}))
      ->capture_default_str();
  app.add_option("--role", f.role, "The workers' ROLE_NAME, as torchrun sets it")
      ->capture_default_str();
}

// The rendezvous --standalone, --rdzv-backend and its flags choose, into `options`.
void choose_rendezvous(const CLI::App& app, const DtrunFlags& f, launch::LaunchOptions& options) {
  using launch::RendezvousBackend;
  const bool master_given = given(app, "--master-addr") || given(app, "--master-port");
  if (f.standalone) {
    DTRAIN_CHECK(!given(app, "--rdzv-endpoint") && !master_given,
                 "--standalone runs its own store on this node; it cannot be combined with ",
                 "--rdzv-endpoint, --master-addr or --master-port");
    DTRAIN_CHECK(options.nnodes.min == 1 && options.nnodes.max == 1,
                 "--standalone is a one-node job, but --nnodes is ", f.nnodes);
    DTRAIN_CHECK(f.node_rank == 0, "--standalone is a one-node job, but --node-rank is ",
                 f.node_rank);
    DTRAIN_CHECK(!given(app, "--rdzv-backend") || f.rdzv_backend != "static",
                 "--standalone uses the c10d rendezvous, not --rdzv-backend static");
    options.backend = RendezvousBackend::kStore;
    options.endpoint = {"127.0.0.1", 0};  // any free port, see the agent
    if (!given(app, "--rdzv-id")) {
      options.run_id = random_run_id();
    }
  } else if (f.rdzv_backend == "static") {
    options.backend = RendezvousBackend::kStatic;
    options.endpoint =
        given(app, "--rdzv-endpoint")
            ? launch::parse_endpoint(f.rdzv_endpoint, static_cast<std::uint16_t>(f.master_port))
            : launch::Endpoint{launch::parse_host(f.master_addr, "--master-addr"),
                               static_cast<std::uint16_t>(f.master_port)};
    if (given(app, "--rdzv-endpoint")) {
      warn_ignored_master_flags(app, f, options.endpoint);
    }
  } else if (f.rdzv_backend == "c10d" || f.rdzv_backend == "store") {
    options.backend = RendezvousBackend::kStore;
    DTRAIN_CHECK(!f.rdzv_endpoint.empty(), "--rdzv-backend ", f.rdzv_backend,
                 " needs --rdzv-endpoint HOST:PORT (or use --standalone for one node)");
    DTRAIN_CHECK(!master_given, "--master-addr/--master-port belong to the static rendezvous; ",
                 "with --rdzv-backend ", f.rdzv_backend, " the store is at --rdzv-endpoint");
    options.endpoint = launch::parse_endpoint(f.rdzv_endpoint, 29400);
    if (given(app, "--node-rank")) {
      spdlog::warn(
          "--node-rank is ignored with --rdzv-backend {}: ranks follow the order nodes "
          "join in",
          f.rdzv_backend);
    }
  } else {
    throw Error("--rdzv-backend '" + f.rdzv_backend + "' is not one of static, c10d (or store)");
  }
}

}  // namespace

void add_dtrun_flags(CLI::App& app, DtrunFlags& f) {
  describe(app);
  add_rendezvous_flags(app, f);
  add_worker_flags(app, f);
  util::add_topic_help(app, {"--nnodes", "--nproc-per-node", "--master-addr", "--rdzv-backend",
                             "--rdzv-endpoint", "--rdzv-id", "--standalone", "--max-restarts"});
}

launch::LaunchOptions to_launch_options(const CLI::App& app, const DtrunFlags& f,
                                        std::vector<std::string> program) {
  if (!program.empty() && program.front() == "--") {
    program.erase(program.begin());
  }
  DTRAIN_CHECK(program.empty() || program.front().empty() || program.front()[0] != '-',
               "unknown flag '", program.empty() ? "" : program.front(), "'",
               program.empty() ? "" : util::did_you_mean(app, program.front()));

  launch::LaunchOptions options;
  options.program = std::move(program);
  options.devices = launch::detect_local_devices();
  options.nnodes = launch::parse_nnodes(f.nnodes);
  options.nproc_per_node = launch::parse_nproc_per_node(f.nproc_per_node, options.devices);
  options.node_rank = f.node_rank;
  options.run_id = f.rdzv_id;
  options.role = f.role;
  options.local_addr = f.local_addr.empty() ? "" : launch::parse_host(f.local_addr, "--local-addr");
  options.max_restarts = f.max_restarts;
  options.monitor_interval =
      launch::parse_seconds(f.monitor_interval, "--monitor-interval '" + f.monitor_interval + "'");
  options.stop_timeout =
      launch::parse_seconds(f.stop_timeout, "--stop-timeout '" + f.stop_timeout + "'");
  options.log_dir = f.log_dir;
  options.redirects = launch::parse_streams(f.redirects, "--redirects");
  options.tee = launch::parse_streams(f.tee, "--tee");
  options.local_ranks_filter = launch::parse_local_ranks_filter(f.local_ranks_filter);
  options.bind_devices = f.bind_devices;
  options.share_gpu = f.share_gpu;

  choose_rendezvous(app, f, options);
  launch::apply_rendezvous_conf(options, launch::parse_key_values(f.rdzv_conf, "--rdzv-conf"));
  launch::validate(options);
  util::check_one_launcher_per_node(util::process_env(), options.nnodes.min, options.nnodes.max);
  // After the flags, so their mistakes are named first.
  options.program = worker_command(std::move(options.program), f.module, f.no_python);
  if (!options.log_dir.empty()) {
    launch::check_log_dir(options.log_dir);  // last: it may create the directory
  }
  return options;
}

}  // namespace dtrain::apps
