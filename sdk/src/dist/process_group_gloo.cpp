// ProcessGroupGloo: checks tensors, queues each collective on the group's
// worker thread, and runs it on the Gloo communicator over flat buffers.
#include "dtrain/dist/process_group_gloo.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <thread>

#include <spdlog/spdlog.h>

#include "collective_args.h"
#include "dtrain/dist/prefix_store.h"
#include "dtrain/util/crash_trace.h"
#include "gloo/gloo_api.h"
#include "gloo/gloo_library.h"
#include "interfaces.h"
#include "timeout_diagnosis.h"
#include "work_queue.h"

namespace dtrain::dist {

// Argument checks and tensor plumbing shared by every backend.
using namespace detail;

namespace {

gloo_api::DType to_gloo(at::ScalarType type) {
  using gloo_api::DType;
  return by_dtype<DType>(type,
                         {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                          DType::kInt32, DType::kInt64, DType::kUInt8},
                         "gloo");
}

gloo_api::Reduce to_gloo(ReduceOp op) {
  using gloo_api::Reduce;
  // AVG is summed, then divided by the group size.
  return by_op<Reduce>(op,
                       {Reduce::kSum, Reduce::kProduct, Reduce::kMin, Reduce::kMax, Reduce::kSum});
}

// Note [A message larger than its receive]
// libgloo checks on its network thread that each message fits the buffer
// its receiver posted, and when one does not, it throws there, where no
// caller can catch it, and the process ends: a recv whose tensor is smaller
// than the sender's, or a collective whose tensors differ in size or dtype
// across ranks (torch's Gloo backend ends the same way). The message's size
// arrives too late to refuse it first (Note [A size beside every message]),
// and asking the receiver's size before every send would add a round trip
// to each one. So what the group can do is say in words what happened: the
// terminate handler (dtrain/util/crash_trace.h) asks this explainer about
// the uncaught exception and adds its line under libgloo's, with the rank.
std::string explain_oversized_message(const std::string& what) {
  // GLOO_ENFORCE_LE's words in libgloo's tcp/pair.cc: "<check>. 20 vs 16".
  const std::string check = "op.preamble.length <= op.nbytes";
  const std::size_t at = what.find(check);
  if (at == std::string::npos) {
    return "";
  }
  unsigned long long arrived = 0;
  unsigned long long room = 0;
  const bool sized =
      std::sscanf(what.c_str() + at + check.size(), ". %llu vs %llu", &arrived, &room) == 2;
  const std::string message =
      sized ? dtrain::detail::concat("a Gloo message of ", arrived,
                                     " bytes arrived where this rank had room for ", room)
            : std::string("a Gloo message arrived that is larger than its receive");
  return message +
         ": a recv's tensor is smaller than the sender's, or this rank's tensor in a "
         "collective is smaller than another rank's (a different size or dtype); libgloo "
         "refuses it on its network thread, which ends the process. DTRAIN_DIST_DEBUG=1 "
         "compares every collective's tensors across ranks before it runs.";
}

}  // namespace

GlooOptions GlooOptions::from_env() {
  GlooOptions options;
  if (const char* iface = std::getenv("GLOO_SOCKET_IFNAME"); iface && *iface) {
    options.iface = iface;
  }
  return options;
}

struct ProcessGroupGloo::Impl {
  std::unique_ptr<gloo_api::Communicator> comm;
  GlooOptions options;
  // For Note [Which rank a timeout waited on] (timeout_diagnosis.h).
  std::shared_ptr<Store> store;
  ProcessGroup* group = nullptr;
  std::int64_t seq = 0;  // collectives run so far; the worker thread's alone
  // Declared after comm, so it stops (draining its tasks) before comm goes.
  WorkQueue queue;

  // Queues collective `op`; `description` is describe(op). A timeout raises
  // the transport's error with the ranks it waited on appended.
  WorkPtr enqueue(const std::string& op, std::string description, std::chrono::milliseconds timeout,
                  std::function<void()> run) {
    return queue.enqueue(description, [this, op, description, timeout, run = std::move(run)] {
      const std::int64_t number = ++seq;
      try {
        run();
      } catch (const CollectiveError&) {
        throw;
      } catch (const std::exception& e) {
        const std::string error = e.what();
        if (!looks_like_timeout(error)) {
          throw;
        }
        throw CollectiveTimeoutError(description + ": " + error +
                                     diagnose_timeout(store, group->name(), group->rank(),
                                                      group->global_ranks(), number, op,
                                                      diagnosis_grace(timeout)));
      }
    });
  }

  std::chrono::milliseconds timeout_or_default(std::chrono::milliseconds timeout) const {
    return timeout.count() > 0 ? timeout : options.timeout;
  }
};

ProcessGroupGloo::ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size,
                                   GlooOptions options, std::string name)
    : ProcessGroup(rank, size, std::move(name)), impl_(std::make_unique<Impl>()) {
  DTRAIN_CHECK(store != nullptr, "ProcessGroupGloo '", this->name(), "': the store is null");
  impl_->options = options;
  impl_->group = this;
  // Note [A message larger than its receive]: once per process, not per group.
  static const bool explained = (util::add_uncaught_explainer(explain_oversized_message), true);
  (void)explained;
  auto group_store = std::make_shared<PrefixStore>("gloo/" + this->name(), store);
  impl_->store = group_store;
  gloo_api::StoreCallbacks callbacks;
  callbacks.set = [group_store](const std::string& key, const std::vector<char>& value) {
    group_store->set(key, Bytes(value.begin(), value.end()));
  };
  callbacks.get = [group_store, timeout = options.timeout](const std::string& key) {
    group_store->wait({key}, timeout);
    const Bytes value = group_store->get(key);
    return std::vector<char>(value.begin(), value.end());
  };
  callbacks.wait = [group_store](const std::vector<std::string>& keys,
                                 std::chrono::milliseconds timeout) {
    group_store->wait(keys, timeout);
  };
  gloo_api::ConnectOptions connect;
  connect.rank = rank;
  connect.size = size;
  // Note [Which address Gloo binds]: an interface is resolved here, so that a
  // wrong name fails with a message naming it before anyone waits; of a
  // list, the first is bound (Note [GLOO_SOCKET_IFNAME's list]).
  if (!options.iface.empty()) {
    try {
      connect.hostname = net::gloo_interface_address(options.iface, options.prefer_ipv6);
    } catch (const Error& e) {
      throw Error(describe("connecting") + ": GLOO_SOCKET_IFNAME / socket_ifname: " + e.what());
    }
  } else {
    connect.hostname = options.hostname;
  }
  connect.timeout = options.timeout;
  try {
    impl_->comm.reset(gloo_api::gloo_connect_function()(&connect, &callbacks));
  } catch (const StoreTimeoutError& e) {
    throw CollectiveTimeoutError(describe("connecting") +
                                 ": not every rank joined in time: " + e.what());
  } catch (const std::exception& e) {
    throw CollectiveError(describe("connecting") + ": " + e.what());
  }
  impl_->queue.start();
  spdlog::debug("{}: connected, listening on {}", describe("gloo group"),
                connect.hostname.empty() ? std::string("this host's name") : connect.hostname);
}

ProcessGroupGloo::~ProcessGroupGloo() {
  impl_->queue.stop();
}

namespace {

void check_cpu(const at::Tensor& tensor, const std::string& what) {
  DTRAIN_CHECK(tensor.defined(), what, ": the tensor is undefined");
  DTRAIN_CHECK(tensor.device().is_cpu(), what, ": gloo takes CPU tensors, got one on ",
               tensor.device().str(),
               " (gloo stages CUDA tensors through the host for broadcast, all_reduce, reduce "
               "and all_gather only; use the nccl backend for CUDA tensors)");
  to_gloo(tensor.scalar_type());
}

// A CUDA tensor, which the group stages through the host: Note [Tensors on
// a device the backend does not move] (collective_args.h).
bool on_gpu(const at::Tensor& tensor) {
  return tensor.defined() && tensor.is_cuda();
}

WorkPtr through_host(const std::string& what, const std::vector<at::Tensor>& inputs,
                     const std::vector<at::Tensor*>& outputs, const StagedRun& run) {
  return staged_on(c10::Device(c10::kCPU), c10::kCUDA, what, inputs, outputs, run);
}

// Note [A size beside every message]
// A Gloo message carries no size its receiver can read: a recv whose tensor
// is larger than the one sent completes with its tail unwritten, and
// nothing says so. So every send also sends its byte count, as a message of
// its own on a slot beside the tag's, and a recv checks it once both have
// arrived: "received 12 bytes, expected 16", as the mpi backend says it.
// Both messages are posted at once on both sides, so they travel together
// and cost no extra round trip; each stream of sizes and of data keeps its
// order per peer and slot, so several messages on one tag still pair up.
// A message larger than the recv's tensor is refused by libgloo itself,
// which ends the process (docs/architecture.md, Gloo backend); the size
// arrives too late to prevent that. Gloo's own collectives take slots
// from 2^56 up, user tags are below 2^31, so the size slots, from 2^40,
// meet neither.
constexpr std::uint64_t kSizeSlots = std::uint64_t{1} << 40;

std::uint64_t size_slot(int tag) {
  return kSizeSlots | static_cast<std::uint64_t>(tag);
}

// What is left of `timeout` since `start`, at least 1 ms (Gloo reads 0 as
// "the context's default").
std::chrono::milliseconds left_of(std::chrono::milliseconds timeout,
                                  std::chrono::steady_clock::time_point start) {
  const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  return std::max(timeout - spent, std::chrono::milliseconds(1));
}

}  // namespace

WorkPtr ProcessGroupGloo::send(const at::Tensor& tensor, int dst, int tag) {
  const std::string what = describe("send to rank " + std::to_string(dst));
  check_cpu(tensor, what);
  check_peer(dst, rank(), size(), what);
  DTRAIN_CHECK(tensor.is_contiguous(), what, ": the tensor must be contiguous");
  DTRAIN_CHECK(tag >= 0, what, ": tag must be >= 0, got ", tag);
  // Note [A size beside every message]
  auto size = std::make_shared<std::uint64_t>(tensor.nbytes());
  auto size_transfer = std::shared_ptr<gloo_api::Transfer>(
      impl_->comm->send(size.get(), sizeof(std::uint64_t), dst, size_slot(tag)));
  auto transfer = std::shared_ptr<gloo_api::Transfer>(
      impl_->comm->send(tensor.const_data_ptr(), tensor.nbytes(), dst, static_cast<uint64_t>(tag)));
  return std::make_shared<DeferredWork>(
      what,
      [transfer, size_transfer, size, keep = tensor](std::chrono::milliseconds timeout) {
        const auto start = std::chrono::steady_clock::now();
        transfer->wait(timeout);
        size_transfer->wait(left_of(timeout, start));
      },
      impl_->options.timeout);
}

WorkPtr ProcessGroupGloo::recv(at::Tensor& tensor, int src, int tag) {
  const std::string what = describe("recv from rank " + std::to_string(src));
  check_cpu(tensor, what);
  check_peer(src, rank(), size(), what);
  DTRAIN_CHECK(tensor.is_contiguous(), what, ": the tensor must be contiguous");
  DTRAIN_CHECK(tag >= 0, what, ": tag must be >= 0, got ", tag);
  // Note [A size beside every message]
  auto size = std::make_shared<std::uint64_t>(0);
  auto size_transfer = std::shared_ptr<gloo_api::Transfer>(
      impl_->comm->recv(size.get(), sizeof(std::uint64_t), src, size_slot(tag)));
  auto transfer = std::shared_ptr<gloo_api::Transfer>(impl_->comm->recv(
      tensor.mutable_data_ptr(), tensor.nbytes(), src, static_cast<uint64_t>(tag)));
  return std::make_shared<DeferredWork>(
      what,
      [transfer, size_transfer, size, keep = tensor](std::chrono::milliseconds timeout) {
        const auto start = std::chrono::steady_clock::now();
        transfer->wait(timeout);
        size_transfer->wait(left_of(timeout, start));
        if (*size != keep.nbytes()) {
          throw CollectiveError(
              dtrain::detail::concat("received ", *size, " bytes, expected ", keep.nbytes(),
                                     " (the sender's tensor has a different size or dtype)"));
        }
      },
      impl_->options.timeout);
}

WorkPtr ProcessGroupGloo::broadcast(at::Tensor& tensor, const BroadcastOptions& options) {
  const std::string op = "broadcast from rank " + std::to_string(options.root);
  const std::string what = describe(op);
  if (on_gpu(tensor)) {
    return through_host(what, {}, {&tensor}, [&](auto&, std::vector<at::Tensor>& out) {
      return broadcast(out[0], options);
    });
  }
  check_cpu(tensor, what);
  check_root(options.root, size(), what);
  const auto timeout = impl_->timeout_or_default(options.timeout);
  return impl_->enqueue(op, what, timeout, [this, tensor, options, timeout]() mutable {
    on_contiguous(tensor, [&](at::Tensor& t) {
      impl_->comm->broadcast(t.mutable_data_ptr(), t.numel(), to_gloo(t.scalar_type()),
                             options.root, timeout);
    });
  });
}

WorkPtr ProcessGroupGloo::all_reduce(at::Tensor& tensor, const AllreduceOptions& options) {
  const std::string op = "all_reduce(" + to_string(options.op) + ")";
  const std::string what = describe(op);
  if (on_gpu(tensor)) {
    return through_host(what, {}, {&tensor}, [&](auto&, std::vector<at::Tensor>& out) {
      return all_reduce(out[0], options);
    });
  }
  check_cpu(tensor, what);
  check_avg(options.op, tensor, what);
  const auto timeout = impl_->timeout_or_default(options.timeout);
  return impl_->enqueue(op, what, timeout, [this, tensor, options, timeout]() mutable {
    on_contiguous(tensor, [&](at::Tensor& t) {
      impl_->comm->all_reduce(t.mutable_data_ptr(), t.numel(), to_gloo(t.scalar_type()),
                              to_gloo(options.op), timeout);
      if (options.op == ReduceOp::kAvg) {
        t.div_(size());
      }
    });
  });
}

WorkPtr ProcessGroupGloo::reduce(at::Tensor& tensor, const ReduceOptions& options) {
  const std::string op =
      "reduce(" + to_string(options.op) + ") to rank " + std::to_string(options.root);
  const std::string what = describe(op);
  if (on_gpu(tensor)) {
    return through_host(what, {}, {&tensor}, [&](auto&, std::vector<at::Tensor>& out) {
      return reduce(out[0], options);
    });
  }
  check_cpu(tensor, what);
  check_root(options.root, size(), what);
  check_avg(options.op, tensor, what);
  const auto timeout = impl_->timeout_or_default(options.timeout);
  return impl_->enqueue(op, what, timeout, [this, tensor, options, timeout]() mutable {
    on_contiguous(tensor, [&](at::Tensor& t) {
      impl_->comm->reduce(t.mutable_data_ptr(), t.numel(), to_gloo(t.scalar_type()),
                          to_gloo(options.op), options.root, timeout);
      if (options.op == ReduceOp::kAvg && rank() == options.root) {
        t.div_(size());
      }
    });
  });
}

WorkPtr ProcessGroupGloo::all_gather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                                     const CollectiveOptions& options) {
  const std::string op = "all_gather";
  const std::string what = describe(op);
  if (on_gpu(input)) {
    return through_host(what, {input}, pointers_to(outputs),
                        [&](std::vector<at::Tensor>& in, std::vector<at::Tensor>& out) {
                          return all_gather(out, in[0], options);
                        });
  }
  check_cpu(input, what);
  check_one_per_rank(outputs, input, size(), what, "outputs");
  const auto timeout = impl_->timeout_or_default(options.timeout);
  return impl_->enqueue(
      op, what, timeout, [this, outputs, input = input.contiguous(), timeout]() mutable {
        at::Tensor flat = at::empty({input.numel() * size()}, input.options());
        impl_->comm->all_gather(input.const_data_ptr(), flat.mutable_data_ptr(), input.numel(),
                                to_gloo(input.scalar_type()), timeout);
        split_into(flat, outputs);
      });
}

WorkPtr ProcessGroupGloo::gather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                                 const RootOptions& options) {
  const std::string op = "gather to rank " + std::to_string(options.root);
  const std::string what = describe(op);
  check_cpu(input, what);
  check_root(options.root, size(), what);
  const bool is_root = rank() == options.root;
  if (is_root) {
    check_one_per_rank(outputs, input, size(), what, "outputs");
  }
  const auto timeout = impl_->timeout_or_default(options.timeout);
  return impl_->enqueue(
      op, what, timeout,
      [this, outputs, input = input.contiguous(), options, timeout, is_root]() mutable {
        at::Tensor flat =
            is_root ? at::empty({input.numel() * size()}, input.options()) : at::Tensor();
        impl_->comm->gather(input.const_data_ptr(), is_root ? flat.mutable_data_ptr() : nullptr,
                            input.numel(), to_gloo(input.scalar_type()), options.root, timeout);
        if (is_root) {
          split_into(flat, outputs);
        }
      });
}

WorkPtr ProcessGroupGloo::scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                                  const RootOptions& options) {
  const std::string op = "scatter from rank " + std::to_string(options.root);
  const std::string what = describe(op);
  check_cpu(output, what);
  check_root(options.root, size(), what);
  const bool is_root = rank() == options.root;
  if (is_root) {
    check_one_per_rank(inputs, output, size(), what, "inputs");
  }
  const auto timeout = impl_->timeout_or_default(options.timeout);
  at::Tensor flat = is_root ? flat_cat(inputs) : at::Tensor();
  return impl_->enqueue(
      op, what, timeout, [this, output, flat, options, timeout, is_root]() mutable {
        on_contiguous(output, [&](at::Tensor& t) {
          impl_->comm->scatter(is_root ? flat.const_data_ptr() : nullptr, t.mutable_data_ptr(),
                               t.numel(), to_gloo(t.scalar_type()), options.root, timeout);
        });
      });
}

WorkPtr ProcessGroupGloo::reduce_scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                                         const AllreduceOptions& options) {
  const std::string op = "reduce_scatter(" + to_string(options.op) + ")";
  const std::string what = describe(op);
  check_cpu(output, what);
  check_avg(options.op, output, what);
  check_one_per_rank(inputs, output, size(), what, "inputs");
  const auto timeout = impl_->timeout_or_default(options.timeout);
  // Gloo has no reduce-scatter for arbitrary sizes: reduce everything, keep our block.
  at::Tensor flat = flat_cat(inputs);
  return impl_->enqueue(op, what, timeout, [this, output, flat, options, timeout]() mutable {
    impl_->comm->all_reduce(flat.mutable_data_ptr(), flat.numel(), to_gloo(flat.scalar_type()),
                            to_gloo(options.op), timeout);
    at::Tensor mine = flat.narrow(0, rank() * output.numel(), output.numel()).view(output.sizes());
    if (options.op == ReduceOp::kAvg) {
      mine = mine / size();
    }
    output.copy_(mine);
  });
}

WorkPtr ProcessGroupGloo::all_to_all(std::vector<at::Tensor>& outputs,
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
  const auto timeout = impl_->timeout_or_default(options.timeout);
  at::Tensor flat_in = flat_cat(inputs);
  return impl_->enqueue(op, what, timeout, [this, outputs, flat_in, timeout]() mutable {
    at::Tensor flat_out = at::empty_like(flat_in);
    impl_->comm->all_to_all(flat_in.const_data_ptr(), flat_out.mutable_data_ptr(),
                            flat_in.numel() / size(), to_gloo(flat_in.scalar_type()), timeout);
    split_into(flat_out, outputs);
  });
}

WorkPtr ProcessGroupGloo::barrier(const CollectiveOptions& options) {
  const auto timeout = impl_->timeout_or_default(options.timeout);
  return impl_->enqueue("barrier", describe("barrier"), timeout,
                        [this, timeout] { impl_->comm->barrier(timeout); });
}

}  // namespace dtrain::dist
