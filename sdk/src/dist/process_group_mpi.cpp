// ProcessGroupMPI: the MPI transport under the ProcessGroup front end
// (transport.h): each collective is posted as an MPI non-blocking
// collective and polled against the op's deadline, in its turn, by the
// thread that waits for it or else the group's worker (Note [The waiter
// runs its task], work_queue.h); an all-reduce of the sizes where MPI's
// blocking call is faster runs as that call, watched.
//
// Note [A blocking all-reduce, watched]
// From 64 KiB to 128 KiB, no schedule of libnbc's keeps up with
// MPI_Allreduce on 2 ranks over TCP (Note [libnbc's all-reduce schedule]),
// so an all-reduce of that size that a thread waits for runs as
// MPI_Allreduce, in its turn, under the MPI lock. Such a call cannot be
// polled or left, so the group's CallWatch (call_watch.h) times it: past
// the op's timeout it names the op and the ranks that never reached it,
// as a polled collective would, then aborts the job (MPI_Abort), as
// MpiOptions::abort_on_timeout does for the others. Work nobody waits for
// yet (DDP's buckets during backward) stays polled with back-off, leaving
// the cores to the program. While the call runs, another thread's MPI call
// waits for the lock; MpiOptions::blocking_all_reduce = false keeps every
// collective polled (a program whose threads drive several groups in an
// order that differs between ranks needs that).
#include "dtrain/dist/process_group_mpi.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <mutex>

#include <spdlog/spdlog.h>

#include "call_watch.h"
#include "dtrain/dist/store_names.h"
#include "dtrain/util/launch_env.h"
#include "mpi_backend.h"
#include "mpi_request_work.h"
#include "mpi_runtime.h"
#include "mpi_schedule.h"
#include "transport.h"
#include "work_queue.h"

namespace dtrain::dist {

// The transport interface (transport.h) and what the backends share.
using namespace detail;

// MPI itself: its lock, checks, mappings and polling (mpi_runtime.h).
using namespace mpi;

namespace {

// How often a group's CallWatch looks at its blocking call: how late past
// its timeout an overdue one is seen, at most.
constexpr std::chrono::milliseconds kLookEvery{100};

// This process's rank or size in MPI_COMM_WORLD (MPI started when needed).
int world_query(int (*query)(MPI_Comm, int*), const char* call) {
  ensure_mpi();
  std::lock_guard<std::mutex> lock(mpi_mutex());
  check_not_finalized(call);
  int value = 0;
  query(MPI_COMM_WORLD, &value);
  return value;
}

}  // namespace

MpiOptions MpiOptions::from_env() {
  return {.abort_on_timeout = util::env_flag("DTRAIN_MPI_ABORT_ON_TIMEOUT").value_or(false),
          .blocking_all_reduce = util::env_flag("DTRAIN_MPI_BLOCKING_ALL_REDUCE").value_or(true)};
}

int ProcessGroupMPI::world_rank() {
  return world_query(MPI_Comm_rank, "MPI_Comm_rank");
}

int ProcessGroupMPI::world_size() {
  return world_query(MPI_Comm_size, "MPI_Comm_size");
}

struct ProcessGroupMPI::Impl : Transport {
  // Becomes `group`'s transport; `what` names the group's creation in errors.
  Impl(ProcessGroupMPI& group, const MpiOptions& options, const std::string& what)
      : Transport({.device = c10::kCPU,
                   .takes = "backend mpi takes CPU tensors",
                   .advice = "use the nccl backend for CUDA tensors",
                   .timeout = options.timeout}),
        group(group),
        options(options) {
    DTRAIN_CHECK(options.timeout.count() > 0, what, ": timeout must be positive, got ",
                 options.timeout.count(), " ms");
    group.set_transport(*this);
  }

  ProcessGroup& group;
  MpiOptions options;
  MPI_Comm comm = MPI_COMM_NULL;
  int tag_limit = 32767;  // MPI_TAG_UB, read when the group starts
  // The first collective that timed out; the group is unusable once set.
  std::string broken_by;
  WorkQueue queue{WorkQueue::Waiters::kRun};
  // Note [A blocking all-reduce, watched]: a thread only where blocking is on.
  std::unique_ptr<CallWatch> watch =
      options.blocking_all_reduce
          ? std::make_unique<CallWatch>(
                kLookEvery, [this](const OpContext& ctx) { return timeout_message(ctx); },
                [this](const std::string& message) {
                  abort_job(comm, message, "a blocking MPI_Allreduce cannot be left");
                })
          : nullptr;

  // MPI reads const buffers through void*; gather's output and scatter's
  // input exist on the root only. Counts were checked at the call (check_size).
  static void* in_ptr(const at::Tensor& t) { return const_cast<void*>(t.const_data_ptr()); }
  static void* root_ptr(const at::Tensor& t) { return t.defined() ? in_ptr(t) : nullptr; }
  static int count(const at::Tensor& t) { return static_cast<int>(t.numel()); }
  static MPI_Datatype type(const at::Tensor& t) { return to_mpi(t.scalar_type()); }

  void check_size(std::int64_t count, const std::string& what) const override {
    mpi_count(count, what);
  }

  void check_tag(int tag, const std::string& what) const override {
    DTRAIN_CHECK(tag >= 0 && tag <= tag_limit, what, ": tag must be in 0..", tag_limit,
                 " (MPI_TAG_UB), got ", tag);
  }

  WorkPtr launch(const OpContext& ctx, std::vector<at::Tensor>, const AtIssue& at_issue) override {
    return queue.enqueue(ctx.what, [this, ctx, in_turn = at_issue()] { turn(ctx, in_turn); });
  }
  WorkPtr run_now(const OpContext& ctx, InTurnRef in_turn) override {
    return queue.run_if_idle(ctx.what, [&] { turn(ctx, in_turn); });
  }
  void turn(const OpContext& ctx, InTurnRef in_turn) {
    DTRAIN_CHECK_AS(CollectiveError, broken_by.empty(), ctx.what,
                    ": the group is unusable since an earlier collective timed out (", broken_by,
                    "); destroy it and end the job");
    run_in_turn(in_turn, ctx);
  }

  // Posts a request under the MPI lock; `start` returns MPI's code.
  static MPI_Request post(const std::string& what, const char* call,
                          c10::function_ref<int(MPI_Request*)> start) {
    MPI_Request request = MPI_REQUEST_NULL;
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check_not_finalized(what);
    mpi_check(start(&request), what, call);
    return request;
  }

  // Posts MPI's non-blocking collective `start` with `args` and the group's
  // communicator, and awaits it; `buffers` are what MPI reads and writes.
  template <typename Start, typename... Args>
  void run(const OpContext& ctx, std::vector<at::Tensor> buffers, Start start, Args... args) {
    await(ctx,
          {post(ctx.what, "posting the collective",
                [&](MPI_Request* r) { return start(args..., comm, r); })},
          std::move(buffers));
  }

  // How a thread tests a request: without pause while a thread waits (the
  // one that runs it, or one that sleeps until the worker is done, Note [The
  // waiter runs its task]), with back-off while the program computes.
  Pace pace() const { return queue.on_worker() && !queue.waited() ? Pace::kBackOff : Pace::kSpin; }

  // What a timed-out collective raises or aborts with: the op, and the
  // ranks that never reached it (Note [Which rank a timeout waited on]).
  std::string timeout_message(const OpContext& ctx) const {
    return ctx.what + ": not finished after " + std::to_string(ctx.timeout.count()) +
           " ms (a rank did not join, or joined a different collective)" +
           diagnose_timeout(options.diagnosis_store, group, ctx);
  }

  // Polls `requests` until all are done or the op's timeout passed; then
  // the op fails naming who never came, and keeps `buffers` (Note
  // [Abandoned buffers]) for MPI, which still owns them.
  void await(const OpContext& ctx, std::vector<MPI_Request> requests,
             std::vector<at::Tensor> buffers) {
    const Clock::time_point deadline = Clock::now() + ctx.timeout;
    for (MPI_Request& request : requests) {
      if (poll(request, deadline, ctx.what, MPI_STATUS_IGNORE, [this] { return pace(); })) {
        continue;
      }
      const std::string message = timeout_message(ctx);
      if (options.abort_on_timeout) {
        abort_job(comm, message, kAbortOnTimeout);
      }
      broken_by = ctx.what;
      abandon(std::move(buffers));
      throw CollectiveTimeoutError(message);
    }
  }

  // Note [A blocking all-reduce, watched]: true when it ran here.
  bool all_reduce_blocking(at::Tensor& data, ReduceOp op, const OpContext& ctx) {
    if (watch == nullptr || !all_reduce_blocks(data.nbytes()) || pace() != Pace::kSpin) {
      return false;
    }
    const CallWatch::Watched watched(*watch, ctx);
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check_not_finalized(ctx.what);
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, data.mutable_data_ptr(), count(data), type(data),
                            to_mpi(op, data.scalar_type()), comm),
              ctx.what, "MPI_Allreduce");
    return true;
  }

  void broadcast(at::Tensor& data, int root, const OpContext& ctx) override {
    run(ctx, {data}, MPI_Ibcast, data.mutable_data_ptr(), count(data), type(data), root);
  }
  // In place, in the pieces and on libnbc's schedule that suit its size
  // (Note [libnbc's all-reduce schedule]), every piece in flight at once.
  void all_reduce(at::Tensor& data, ReduceOp op, const OpContext& ctx) override {
    if (all_reduce_blocking(data, op, ctx)) {
      return;
    }
    const std::int64_t numel = data.numel();
    const std::int64_t pieces = iallreduce_pieces(static_cast<std::int64_t>(data.nbytes()));
    const std::int64_t per_piece = std::max<std::int64_t>((numel + pieces - 1) / pieces, 1);
    std::vector<MPI_Request> requests;
    for (std::int64_t start = 0; start == 0 || start < numel; start += per_piece) {
      // narrow() goes through the dispatcher: not for a tensor in one piece.
      at::Tensor piece =
          pieces == 1 ? data : data.narrow(0, start, std::min(per_piece, numel - start));
      requests.push_back(post(ctx.what, "MPI_Iallreduce", [&](MPI_Request* r) {
        choose_iallreduce_schedule(static_cast<std::int64_t>(piece.nbytes()));
        return MPI_Iallreduce(MPI_IN_PLACE, piece.mutable_data_ptr(), count(piece), type(piece),
                              to_mpi(op, piece.scalar_type()), comm, r);
      }));
    }
    await(ctx, std::move(requests), {data});
  }
  // The root reduces in place; the others only send theirs.
  void reduce(at::Tensor& data, ReduceOp op, int root, const OpContext& ctx) override {
    const bool is_root = group.rank() == root;
    run(ctx, {data}, MPI_Ireduce, is_root ? MPI_IN_PLACE : in_ptr(data),
        is_root ? data.mutable_data_ptr() : nullptr, count(data), type(data),
        to_mpi(op, data.scalar_type()), root);
  }
  void all_gather(const at::Tensor& in, at::Tensor& out, const OpContext& ctx) override {
    run(ctx, {in, out}, MPI_Iallgather, in_ptr(in), count(in), type(in), out.mutable_data_ptr(),
        count(in), type(in));
  }
  void gather(const at::Tensor& in, at::Tensor& out, int root, const OpContext& ctx) override {
    run(ctx, {in, out}, MPI_Igather, in_ptr(in), count(in), type(in), root_ptr(out), count(in),
        type(in), root);
  }
  void scatter(const at::Tensor& in, at::Tensor& out, int root, const OpContext& ctx) override {
    run(ctx, {out, in}, MPI_Iscatter, root_ptr(in), count(out), type(out), out.mutable_data_ptr(),
        count(out), type(out), root);
  }
  void reduce_scatter(at::Tensor& in, at::Tensor& out, ReduceOp op, const OpContext& ctx) override {
    run(ctx, {out, in}, MPI_Ireduce_scatter_block, in_ptr(in), out.mutable_data_ptr(), count(out),
        type(out), to_mpi(op, out.scalar_type()));
  }
  void all_to_all(const at::Tensor& in, at::Tensor& out, const BlockSizes&,
                  const OpContext& ctx) override {
    const int block = count(in) / group.size();
    run(ctx, {in, out}, MPI_Ialltoall, in_ptr(in), block, type(in), out.mutable_data_ptr(), block,
        type(in));
  }
  WorkPtr barrier(const OpContext& ctx) override {
    return launch(ctx, {}, in_turn_only([this](const OpContext& c) { run(c, {}, MPI_Ibarrier); }));
  }

  WorkPtr send(const at::Tensor& data, int dst, int tag, const OpContext& ctx) override {
    const MPI_Request request = post(ctx.what, "MPI_Isend", [&](MPI_Request* r) {
      return MPI_Isend(in_ptr(data), static_cast<int>(data.nbytes()), MPI_BYTE, dst, tag, comm, r);
    });
    return make_request_work(ctx.what, request, data, -1, comm, options);
  }
  WorkPtr recv(at::Tensor& data, int src, int tag, const OpContext& ctx) override {
    const auto bytes = static_cast<int>(data.nbytes());
    const MPI_Request request = post(ctx.what, "MPI_Irecv", [&](MPI_Request* r) {
      return MPI_Irecv(data.mutable_data_ptr(), bytes, MPI_BYTE, src, tag, comm, r);
    });
    return make_request_work(ctx.what, request, data, bytes, comm, options);
  }

  void start_worker(const std::string& what) {
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
      int* upper = nullptr;
      int found = 0;
      MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &upper, &found);
      tag_limit = found && upper ? *upper : tag_limit;
    }
    queue.start();
    spdlog::debug("{}: ready", what);
  }
};

namespace {

int position_in(const std::vector<int>& world_ranks, const std::string& name) {
  const int me = ProcessGroupMPI::world_rank();
  const int world = ProcessGroupMPI::world_size();
  DTRAIN_CHECK(!world_ranks.empty(), "ProcessGroupMPI '", name, "': world_ranks is empty");
  for (std::size_t i = 0; i < world_ranks.size(); ++i) {
    DTRAIN_CHECK(world_ranks[i] >= 0 && world_ranks[i] < world, "ProcessGroupMPI '", name,
                 "': world rank ", world_ranks[i], " is outside the MPI world of size ", world);
    for (std::size_t j = 0; j < i; ++j) {
      DTRAIN_CHECK(world_ranks[j] != world_ranks[i], "ProcessGroupMPI '", name, "': world rank ",
                   world_ranks[i], " is listed twice");
    }
  }
  const auto it = std::find(world_ranks.begin(), world_ranks.end(), me);
  DTRAIN_CHECK(it != world_ranks.end(), "ProcessGroupMPI '", name, "': this process (world rank ",
               me, ") is not one of the group's world ranks");
  return static_cast<int>(it - world_ranks.begin());
}

// All members derive the same MPI_Comm_create_group tag from the group's name.
int tag_of(const std::string& name) {
  return static_cast<int>(std::hash<std::string>{}(name) % 32000);
}

}  // namespace

ProcessGroupMPI::ProcessGroupMPI(MpiOptions options, std::string name)
    : ProcessGroup(world_rank(), world_size(), std::move(name)),
      impl_(std::make_unique<Impl>(*this, options, describe("creating the group"))) {
  const std::string what = describe("creating the group");
  // MPI_Comm_idup, polled, so a rank that never comes times out like a collective.
  MPI_Request request = Impl::post(what, "MPI_Comm_idup", [&](MPI_Request* r) {
    return MPI_Comm_idup(MPI_COMM_WORLD, &impl_->comm, r);
  });
  if (!poll(request, Clock::now() + options.timeout, what)) {
    throw CollectiveTimeoutError(what + ": not every rank joined within " +
                                 std::to_string(options.timeout.count()) + " ms");
  }
  impl_->start_worker(describe("mpi group"));
}

ProcessGroupMPI::ProcessGroupMPI(std::vector<int> world_ranks, MpiOptions options, std::string name)
    : ProcessGroup(position_in(world_ranks, name), static_cast<int>(world_ranks.size()),
                   std::move(name)),
      impl_(std::make_unique<Impl>(*this, options, describe("creating the group"))) {
  const std::string what = describe("creating the group");
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check_not_finalized(what);
    MPI_Group world_group = MPI_GROUP_NULL;
    MPI_Group group = MPI_GROUP_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, static_cast<int>(world_ranks.size()), world_ranks.data(), &group);
    const int code =
        MPI_Comm_create_group(MPI_COMM_WORLD, group, tag_of(this->name()), &impl_->comm);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    mpi_check(code, what, "MPI_Comm_create_group");
  }
  impl_->start_worker(describe("mpi group"));
}

ProcessGroupMPI::~ProcessGroupMPI() {
  impl_->queue.stop();  // finishes queued work first
  std::lock_guard<std::mutex> lock(mpi_mutex());
  // A broken group still has a collective in flight: leave its communicator be.
  if (!finalized() && impl_->broken_by.empty() && impl_->comm != MPI_COMM_NULL) {
    MPI_Comm_free(&impl_->comm);  // pending sends and receives still complete
  }
}

// ---- init.cpp's entry points (mpi_backend.h) ----

void check_mpi_world(int rank, int world_size) {
  const int mpi_rank = ProcessGroupMPI::world_rank();
  const int mpi_size = ProcessGroupMPI::world_size();
  DTRAIN_CHECK(
      rank == mpi_rank && world_size == mpi_size, "init_process_group: backend mpi: MPI says this ",
      "process is rank ", mpi_rank, " of ", mpi_size, ", but rank ", rank, " and world size ",
      world_size, " were given (InitOptions, or RANK/WORLD_SIZE/OMPI_COMM_WORLD_* in the ",
      "environment); start the program with mpirun -np ", world_size,
      " and leave rank and world_size at -1",
      mpi_size == 1 ? " (MPI sees a world of 1: was the program started without mpirun?)" : "");
}

ProcessGroupPtr make_mpi_group(const std::shared_ptr<Store>& store, int rank, int size,
                               std::chrono::milliseconds timeout, const std::string& name) {
  MpiOptions options = MpiOptions::from_env();
  options.timeout = timeout;
  if (store) {
    options.diagnosis_store = std::make_shared<PrefixStore>("mpi/" + name, store);
  }
  if (size == ProcessGroupMPI::world_size()) {
    check_mpi_world(rank, size);
    return std::make_shared<ProcessGroupMPI>(options, name);
  }
  // A sub-group: its members learn each other's MPI_COMM_WORLD ranks through the store.
  PrefixStore group_store("mpi/" + name, store);
  group_store.set("world_rank/" + std::to_string(rank),
                  std::to_string(ProcessGroupMPI::world_rank()));
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) {
    keys.push_back("world_rank/" + std::to_string(r));
  }
  try {
    group_store.wait(keys, timeout);
  } catch (const StoreTimeoutError& e) {
    throw CollectiveTimeoutError("new_group '" + name + "' (mpi): not all " + std::to_string(size) +
                                 " members arrived within " + std::to_string(timeout.count()) +
                                 " ms: " + e.what());
  }
  std::vector<int> world_ranks;
  for (const auto& key : keys) {
    world_ranks.push_back(std::stoi(group_store.get_string(key)));
  }
  return std::make_shared<ProcessGroupMPI>(std::move(world_ranks), options, name);
}

}  // namespace dtrain::dist
