// ProcessGroupMPI: checks tensors, queues each collective on the group's
// worker thread, posts it as an MPI non-blocking collective and polls it
// against the op's deadline.
#include "dtrain/dist/process_group_mpi.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <mutex>

#include <spdlog/spdlog.h>

#include "collective_args.h"
#include "dtrain/dist/prefix_store.h"
#include "dtrain/util/launch_env.h"
#include "mpi_backend.h"
#include "mpi_request_work.h"
#include "mpi_runtime.h"
#include "timeout_diagnosis.h"
#include "work_queue.h"

namespace dtrain::dist {

// Argument checks and tensor plumbing shared by every backend.
using namespace detail;

// MPI itself: its lock, checks, mappings and polling (mpi_runtime.h).
using namespace mpi;

MpiOptions MpiOptions::from_env() {
  return {.abort_on_timeout = util::env_flag("DTRAIN_MPI_ABORT_ON_TIMEOUT").value_or(false)};
}

int ProcessGroupMPI::world_rank() {
  ensure_mpi();
  std::lock_guard<std::mutex> lock(mpi_mutex());
  check_not_finalized("MPI_Comm_rank");
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int ProcessGroupMPI::world_size() {
  ensure_mpi();
  std::lock_guard<std::mutex> lock(mpi_mutex());
  check_not_finalized("MPI_Comm_size");
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

struct ProcessGroupMPI::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  MpiOptions options;
  ProcessGroup* group = nullptr;
  // The first collective that timed out; the group is unusable once set.
  std::string broken_by;
  // The collective the worker runs now, for Note [Which rank a timeout
  // waited on]: its number among the group's collectives and its op. The
  // worker thread's alone.
  std::int64_t seq = 0;
  std::string running_op;
  WorkQueue queue;

  // Queues collective `op`; `description` is describe(op).
  WorkPtr enqueue(const std::string& op, std::string description, std::function<void()> run) {
    return queue.enqueue(description, [this, op, description, run = std::move(run)] {
      ++seq;
      running_op = op;
      DTRAIN_CHECK_AS(CollectiveError, broken_by.empty(), description,
                      ": the group is unusable since an earlier collective timed out (", broken_by,
                      "); destroy it and end the job");
      run();
    });
  }

  // What a timeout of the running collective appends to its error: the
  // ranks that never reached it, when the group has a store to ask.
  std::string diagnosis(std::chrono::milliseconds timeout) const {
    if (!options.diagnosis_store) {
      return "";
    }
    return diagnose_timeout(options.diagnosis_store, group->name(), group->rank(),
                            group->global_ranks(), seq, running_op, diagnosis_grace(timeout));
  }

  std::chrono::milliseconds timeout_or_default(std::chrono::milliseconds timeout) const {
    return timeout.count() > 0 ? timeout : options.timeout;
  }

  // On the worker: posts a non-blocking collective (`post` returns MPI's
  // code) and polls it until done or `timeout`; `buffers` are what MPI
  // reads and writes (see Note [Abandoned buffers]).
  void complete(const std::string& what, std::chrono::milliseconds timeout,
                const std::function<int(MPI_Request*)>& post, std::vector<at::Tensor> buffers) {
    MPI_Request request = MPI_REQUEST_NULL;
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      check_not_finalized(what);
      mpi_check(post(&request), what, "posting the collective");
    }
    if (!poll(request, Clock::now() + timeout, what)) {
      const std::string message = what + ": not finished after " + std::to_string(timeout.count()) +
                                  " ms (a rank did not join, or joined a different collective)" +
                                  diagnosis(timeout);
      if (options.abort_on_timeout) {
        abort_job(comm, message);
      }
      broken_by = what;
      abandon(std::move(buffers));
      throw CollectiveTimeoutError(message);
    }
  }

  void start_worker() {
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    }
    queue.start();
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
    : ProcessGroup(world_rank(), world_size(), std::move(name)), impl_(std::make_unique<Impl>()) {
  DTRAIN_CHECK(options.timeout.count() > 0, describe("creating the group"),
               ": timeout must be positive, got ", options.timeout.count(), " ms");
  impl_->options = options;
  impl_->group = this;
  // MPI_Comm_idup, polled, so a rank that never comes times out like a collective.
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check_not_finalized(describe("creating the group"));
    mpi_check(MPI_Comm_idup(MPI_COMM_WORLD, &impl_->comm, &request), describe("creating the group"),
              "MPI_Comm_idup");
  }
  if (!poll(request, Clock::now() + options.timeout, describe("creating the group"))) {
    throw CollectiveTimeoutError(describe("creating the group") +
                                 ": not every rank joined within " +
                                 std::to_string(options.timeout.count()) + " ms");
  }
  impl_->start_worker();
  spdlog::debug("{}: ready", describe("mpi group"));
}

ProcessGroupMPI::ProcessGroupMPI(std::vector<int> world_ranks, MpiOptions options, std::string name)
    : ProcessGroup(position_in(world_ranks, name), static_cast<int>(world_ranks.size()),
                   std::move(name)),
      impl_(std::make_unique<Impl>()) {
  DTRAIN_CHECK(options.timeout.count() > 0, describe("creating the group"),
               ": timeout must be positive, got ", options.timeout.count(), " ms");
  impl_->options = options;
  impl_->group = this;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check_not_finalized(describe("creating the group"));
    MPI_Group world_group = MPI_GROUP_NULL;
    MPI_Group group = MPI_GROUP_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, static_cast<int>(world_ranks.size()), world_ranks.data(), &group);
    const int code =
        MPI_Comm_create_group(MPI_COMM_WORLD, group, tag_of(this->name()), &impl_->comm);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    mpi_check(code, describe("creating the group"), "MPI_Comm_create_group");
  }
  impl_->start_worker();
  spdlog::debug("{}: ready", describe("mpi group"));
}

ProcessGroupMPI::~ProcessGroupMPI() {
  impl_->queue.stop();  // finishes queued work first
  std::lock_guard<std::mutex> lock(mpi_mutex());
  // A broken group still has a collective in flight: leave its communicator be.
  if (!finalized() && impl_->broken_by.empty() && impl_->comm != MPI_COMM_NULL) {
    MPI_Comm_free(&impl_->comm);  // pending sends and receives still complete
  }
}

namespace {

void check_cpu(const at::Tensor& tensor, const std::string& what) {
  DTRAIN_CHECK(tensor.defined(), what, ": the tensor is undefined");
  DTRAIN_CHECK(tensor.device().is_cpu(), what, ": backend mpi takes CPU tensors, got one on ",
               tensor.device().str(), " (use the nccl backend for CUDA tensors)");
  to_mpi(tensor.scalar_type());
  mpi_count(tensor.numel() * tensor.element_size(), what);
}

void check_tag(int tag, const std::string& what) {
  int* upper = nullptr;
  int found = 0;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check_not_finalized(what);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &upper, &found);
  }
  const int limit = found && upper ? *upper : 32767;
  DTRAIN_CHECK(tag >= 0 && tag <= limit, what, ": tag must be in 0..", limit, " (MPI_TAG_UB), got ",
               tag);
}

// MPI reads const input buffers through void*.
void* in_ptr(const at::Tensor& t) {
  return const_cast<void*>(t.const_data_ptr());
}

}  // namespace

WorkPtr ProcessGroupMPI::send(const at::Tensor& tensor, int dst, int tag) {
  const std::string what = describe("send to rank " + std::to_string(dst));
  check_cpu(tensor, what);
  check_peer(dst, rank(), size(), what);
  check_tag(tag, what);
  DTRAIN_CHECK(tensor.is_contiguous(), what, ": the tensor must be contiguous");
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check_not_finalized(what);
    mpi_check(MPI_Isend(in_ptr(tensor), static_cast<int>(tensor.nbytes()), MPI_BYTE, dst, tag,
                        impl_->comm, &request),
              what, "MPI_Isend");
  }
  return make_request_work(what, request, tensor, -1, impl_->comm, impl_->options);
}

WorkPtr ProcessGroupMPI::recv(at::Tensor& tensor, int src, int tag) {
  const std::string what = describe("recv from rank " + std::to_string(src));
  check_cpu(tensor, what);
  check_peer(src, rank(), size(), what);
  check_tag(tag, what);
  DTRAIN_CHECK(tensor.is_contiguous(), what, ": the tensor must be contiguous");
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check_not_finalized(what);
    mpi_check(MPI_Irecv(tensor.mutable_data_ptr(), static_cast<int>(tensor.nbytes()), MPI_BYTE, src,
                        tag, impl_->comm, &request),
              what, "MPI_Irecv");
  }
  return make_request_work(what, request, tensor, static_cast<int64_t>(tensor.nbytes()),
                           impl_->comm, impl_->options);
}

WorkPtr ProcessGroupMPI::broadcast(at::Tensor& tensor, const BroadcastOptions& options) {
  const std::string op = "broadcast from rank " + std::to_string(options.root);
  const std::string what = describe(op);
  check_cpu(tensor, what);
  check_root(options.root, size(), what);
  const auto timeout = impl_->timeout_or_default(options.timeout);
  return impl_->enqueue(op, what, [this, what, tensor, options, timeout]() mutable {
    on_contiguous(tensor, [&](at::Tensor& t) {
      impl_->complete(what, timeout,
                      [&](MPI_Request* r) {
                        return MPI_Ibcast(t.mutable_data_ptr(), static_cast<int>(t.numel()),
                                          to_mpi(t.scalar_type()), options.root, impl_->comm, r);
                      },
                      {t});
    });
  });
}

WorkPtr ProcessGroupMPI::all_reduce(at::Tensor& tensor, const AllreduceOptions& options) {
  const std::string op = "all_reduce(" + to_string(options.op) + ")";
  const std::string what = describe(op);
  check_cpu(tensor, what);
  check_avg(options.op, tensor, what);
  const auto timeout = impl_->timeout_or_default(options.timeout);
  return impl_->enqueue(op, what, [this, what, tensor, options, timeout]() mutable {
    on_contiguous(tensor, [&](at::Tensor& t) {
      impl_->complete(what, timeout,
                      [&](MPI_Request* r) {
                        return MPI_Iallreduce(MPI_IN_PLACE, t.mutable_data_ptr(),
                                              static_cast<int>(t.numel()), to_mpi(t.scalar_type()),
                                              to_mpi(options.op, t.scalar_type()), impl_->comm, r);
                      },
                      {t});
      if (options.op == ReduceOp::kAvg) {
        t.div_(size());
      }
    });
  });
}

WorkPtr ProcessGroupMPI::reduce(at::Tensor& tensor, const ReduceOptions& options) {
  const std::string op =
      "reduce(" + to_string(options.op) + ") to rank " + std::to_string(options.root);
  const std::string what = describe(op);
  check_cpu(tensor, what);
  check_root(options.root, size(), what);
  check_avg(options.op, tensor, what);
  const auto timeout = impl_->timeout_or_default(options.timeout);
  const bool is_root = rank() == options.root;
  return impl_->enqueue(op, what, [this, what, tensor, options, timeout, is_root]() mutable {
    on_contiguous(tensor, [&](at::Tensor& t) {
      impl_->complete(what, timeout,
                      [&](MPI_Request* r) {
                        // The root reduces in place; the others only send theirs.
                        return MPI_Ireduce(is_root ? MPI_IN_PLACE : in_ptr(t),
                                           is_root ? t.mutable_data_ptr() : nullptr,
                                           static_cast<int>(t.numel()), to_mpi(t.scalar_type()),
                                           to_mpi(options.op, t.scalar_type()), options.root,
                                           impl_->comm, r);
                      },
                      {t});
      if (options.op == ReduceOp::kAvg && is_root) {
        t.div_(size());
      }
    });
  });
}

WorkPtr ProcessGroupMPI::all_gather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                                    const CollectiveOptions& options) {
  const std::string op = "all_gather";
  const std::string what = describe(op);
  check_cpu(input, what);
  check_one_per_rank(outputs, input, size(), what, "outputs");
  mpi_count(input.numel() * size(), what);
  const auto timeout = impl_->timeout_or_default(options.timeout);
  return impl_->enqueue(
      op, what, [this, what, outputs, input = input.contiguous(), timeout]() mutable {
        at::Tensor flat = at::empty({input.numel() * size()}, input.options());
        impl_->complete(what, timeout,
                        [&](MPI_Request* r) {
                          const auto type = to_mpi(input.scalar_type());
                          const int count = static_cast<int>(input.numel());
                          return MPI_Iallgather(in_ptr(input), count, type, flat.mutable_data_ptr(),
                                                count, type, impl_->comm, r);
                        },
                        {input, flat});
        split_into(flat, outputs);
      });
}

WorkPtr ProcessGroupMPI::gather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                                const RootOptions& options) {
  const std::string op = "gather to rank " + std::to_string(options.root);
  const std::string what = describe(op);
  check_cpu(input, what);
  check_root(options.root, size(), what);
  const bool is_root = rank() == options.root;
  if (is_root) {
    check_one_per_rank(outputs, input, size(), what, "outputs");
    mpi_count(input.numel() * size(), what);
  }
  const auto timeout = impl_->timeout_or_default(options.timeout);
  return impl_->enqueue(
      op, what,
      [this, what, outputs, input = input.contiguous(), options, timeout, is_root]() mutable {
        at::Tensor flat =
            is_root ? at::empty({input.numel() * size()}, input.options()) : at::empty({0});
        impl_->complete(what, timeout,
                        [&](MPI_Request* r) {
                          const auto type = to_mpi(input.scalar_type());
                          const int count = static_cast<int>(input.numel());
                          return MPI_Igather(in_ptr(input), count, type,
                                             is_root ? flat.mutable_data_ptr() : nullptr, count,
                                             type, options.root, impl_->comm, r);
                        },
                        {input, flat});
        if (is_root) {
          split_into(flat, outputs);
        }
      });
}

WorkPtr ProcessGroupMPI::scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                                 const RootOptions& options) {
  const std::string op = "scatter from rank " + std::to_string(options.root);
  const std::string what = describe(op);
  check_cpu(output, what);
  check_root(options.root, size(), what);
  const bool is_root = rank() == options.root;
  if (is_root) {
    check_one_per_rank(inputs, output, size(), what, "inputs");
    mpi_count(output.numel() * size(), what);
  }
  const auto timeout = impl_->timeout_or_default(options.timeout);
  at::Tensor flat = is_root ? flat_cat(inputs) : at::empty({0});
  return impl_->enqueue(op, what, [this, what, output, flat, options, timeout, is_root]() mutable {
    on_contiguous(output, [&](at::Tensor& t) {
      impl_->complete(what, timeout,
                      [&](MPI_Request* r) {
                        const auto type = to_mpi(t.scalar_type());
                        const int count = static_cast<int>(t.numel());
                        return MPI_Iscatter(is_root ? in_ptr(flat) : nullptr, count, type,
                                            t.mutable_data_ptr(), count, type, options.root,
                                            impl_->comm, r);
                      },
                      {t, flat});
    });
  });
}

WorkPtr ProcessGroupMPI::reduce_scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                                        const AllreduceOptions& options) {
  const std::string op = "reduce_scatter(" + to_string(options.op) + ")";
  const std::string what = describe(op);
  check_cpu(output, what);
  check_avg(options.op, output, what);
  check_one_per_rank(inputs, output, size(), what, "inputs");
  mpi_count(output.numel() * size(), what);
  const auto timeout = impl_->timeout_or_default(options.timeout);
  at::Tensor flat = flat_cat(inputs);
  return impl_->enqueue(op, what, [this, what, output, flat, options, timeout]() mutable {
    on_contiguous(output, [&](at::Tensor& t) {
      impl_->complete(what, timeout,
                      [&](MPI_Request* r) {
                        return MPI_Ireduce_scatter_block(
                            in_ptr(flat), t.mutable_data_ptr(), static_cast<int>(t.numel()),
                            to_mpi(t.scalar_type()), to_mpi(options.op, t.scalar_type()),
                            impl_->comm, r);
                      },
                      {t, flat});
      if (options.op == ReduceOp::kAvg) {
        t.div_(size());
      }
    });
  });
}

WorkPtr ProcessGroupMPI::all_to_all(std::vector<at::Tensor>& outputs,
                                    const std::vector<at::Tensor>& inputs,
                                    const CollectiveOptions& options) {
  const std::string op = "all_to_all";
  const std::string what = describe(op);
  check_count(inputs, size(), what, "inputs");
  check_count(outputs, size(), what, "outputs");
  for (int i = 0; i < size(); ++i) {
    check_cpu(inputs[i], what);
    check_same(inputs[0], inputs[i], what);
    check_same(inputs[0], outputs[i], what);
  }
  mpi_count(inputs[0].numel() * size(), what);
  const auto timeout = impl_->timeout_or_default(options.timeout);
  at::Tensor flat_in = flat_cat(inputs);
  return impl_->enqueue(op, what, [this, what, outputs, flat_in, timeout]() mutable {
    at::Tensor flat_out = at::empty_like(flat_in);
    impl_->complete(what, timeout,
                    [&](MPI_Request* r) {
                      const auto type = to_mpi(flat_in.scalar_type());
                      const int count = static_cast<int>(flat_in.numel() / size());
                      return MPI_Ialltoall(in_ptr(flat_in), count, type,
                                           flat_out.mutable_data_ptr(), count, type, impl_->comm,
                                           r);
                    },
                    {flat_in, flat_out});
    split_into(flat_out, outputs);
  });
}

WorkPtr ProcessGroupMPI::barrier(const CollectiveOptions& options) {
  const std::string op = "barrier";
  const std::string what = describe(op);
  const auto timeout = impl_->timeout_or_default(options.timeout);
  return impl_->enqueue(op, what, [this, what, timeout] {
    impl_->complete(what, timeout, [&](MPI_Request* r) { return MPI_Ibarrier(impl_->comm, r); },
                    {});
  });
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
