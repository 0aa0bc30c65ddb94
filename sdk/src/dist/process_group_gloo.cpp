// ProcessGroupGloo: the Gloo transport under the ProcessGroup front end
// (transport.h): each collective runs on the group's worker thread on flat
// buffers; send and recv go straight to Gloo's unbound buffers.
#include "dtrain/dist/process_group_gloo.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "collective_args.h"
#include "dtrain/dist/store_names.h"
#include "dtrain/util/crash_trace.h"
#include "gloo/gloo_api.h"
#include "gloo/gloo_library.h"
#include "interfaces.h"
#include "transport.h"
#include "work_queue.h"

namespace dtrain::dist {

// The transport interface (transport.h) and what the backends share.
using namespace detail;

namespace {

gloo_api::DType to_gloo(const at::Tensor& tensor) {
  using gloo_api::DType;
  return by_dtype<DType>(tensor.scalar_type(),
                         {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                          DType::kInt32, DType::kInt64, DType::kUInt8},
                         "gloo");
}

gloo_api::Reduce to_gloo(ReduceOp op) {
  using gloo_api::Reduce;
  // AVG never comes: the front end reduces it as SUM and divides.
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
// which ends the process (docs/design/decisions.md, Gloo backend); the size
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

GlooOptions GlooOptions::from_env() {
  GlooOptions options;
  if (const char* iface = std::getenv("GLOO_SOCKET_IFNAME"); iface && *iface) {
    options.iface = iface;
  }
  return options;
}

struct ProcessGroupGloo::Impl : Transport {
  Impl(ProcessGroup& group, std::chrono::milliseconds timeout)
      : Transport({.device = c10::kCPU,
                   .stages_from = c10::kCUDA,
                   .takes = "gloo takes CPU tensors",
                   .advice = "gloo stages CUDA tensors through the host for broadcast, "
                             "all_reduce, reduce and all_gather only; use the nccl backend for "
                             "CUDA tensors",
                   .timeout = timeout}),
        group(group) {}

  std::unique_ptr<gloo_api::Communicator> comm;
  ProcessGroup& group;
  // For Note [Which rank a timeout waited on] (timeout_diagnosis.h).
  std::shared_ptr<Store> store;
  // Declared after comm, so it stops (draining its tasks) before comm goes.
  WorkQueue queue;

  c10::Device staging_device(const std::string&) override { return c10::Device(c10::kCPU); }

  // On the worker; a timeout raises the transport's error with the ranks it
  // waited on appended.
  WorkPtr launch(const OpContext& ctx, std::vector<at::Tensor>, const AtIssue& at_issue) override {
    return queue.enqueue(ctx.what, [this, ctx, in_turn = at_issue()] {
      try {
        in_turn(ctx);
      } catch (const CollectiveError&) {
        throw;
      } catch (const std::exception& e) {
        if (!looks_like_timeout(e.what())) {
          throw;
        }
        throw CollectiveTimeoutError(ctx.what + ": " + e.what() +
                                     diagnose_timeout(store, group, ctx));
      }
    });
  }

  void broadcast(at::Tensor& data, int root, const OpContext& ctx) override {
    comm->broadcast(data.mutable_data_ptr(), data.numel(), to_gloo(data), root, ctx.timeout);
  }
  void all_reduce(at::Tensor& data, ReduceOp op, const OpContext& ctx) override {
    comm->all_reduce(data.mutable_data_ptr(), data.numel(), to_gloo(data), to_gloo(op),
                     ctx.timeout);
  }
  void reduce(at::Tensor& data, ReduceOp op, int root, const OpContext& ctx) override {
    comm->reduce(data.mutable_data_ptr(), data.numel(), to_gloo(data), to_gloo(op), root,
                 ctx.timeout);
  }
  void all_gather(const at::Tensor& in, at::Tensor& out, const OpContext& ctx) override {
    comm->all_gather(in.const_data_ptr(), out.mutable_data_ptr(), in.numel(), to_gloo(in),
                     ctx.timeout);
  }
  void gather(const at::Tensor& in, at::Tensor& out, int root, const OpContext& ctx) override {
    comm->gather(in.const_data_ptr(), out.defined() ? out.mutable_data_ptr() : nullptr, in.numel(),
                 to_gloo(in), root, ctx.timeout);
  }
  void scatter(const at::Tensor& in, at::Tensor& out, int root, const OpContext& ctx) override {
    comm->scatter(in.defined() ? in.const_data_ptr() : nullptr, out.mutable_data_ptr(), out.numel(),
                  to_gloo(out), root, ctx.timeout);
  }
  // Gloo has no reduce-scatter for arbitrary sizes: reduce everything, keep our block.
  void reduce_scatter(at::Tensor& in, at::Tensor& out, ReduceOp op, const OpContext& ctx) override {
    all_reduce(in, op, ctx);
    out.copy_(in.narrow(0, group.rank() * out.numel(), out.numel()).view(out.sizes()));
  }
  void all_to_all(const at::Tensor& in, at::Tensor& out, const BlockSizes&,
                  const OpContext& ctx) override {
    comm->all_to_all(in.const_data_ptr(), out.mutable_data_ptr(), in.numel() / group.size(),
                     to_gloo(in), ctx.timeout);
  }
  WorkPtr barrier(const OpContext& ctx) override {
    return launch(ctx, {}, in_turn_only([this](const OpContext& c) { comm->barrier(c.timeout); }));
  }

  // Note [A size beside every message]: the size's transfer is posted first.
  WorkPtr send(const at::Tensor& data, int dst, int tag, const OpContext& ctx) override {
    auto size = std::make_shared<std::uint64_t>(data.nbytes());
    auto sized = comm->send(size.get(), sizeof(std::uint64_t), dst, size_slot(tag));
    return with_size(
        ctx, data, size, std::move(sized),
        comm->send(data.const_data_ptr(), data.nbytes(), dst, static_cast<std::uint64_t>(tag)),
        false);
  }
  WorkPtr recv(at::Tensor& data, int src, int tag, const OpContext& ctx) override {
    auto size = std::make_shared<std::uint64_t>(0);
    auto sized = comm->recv(size.get(), sizeof(std::uint64_t), src, size_slot(tag));
    return with_size(
        ctx, data, size, std::move(sized),
        comm->recv(data.mutable_data_ptr(), data.nbytes(), src, static_cast<std::uint64_t>(tag)),
        true);
  }

  // Waits for a message and its size; a receive checks that they agree.
  WorkPtr with_size(const OpContext& ctx, const at::Tensor& data,
                    std::shared_ptr<std::uint64_t> size,
                    std::shared_ptr<gloo_api::Transfer> size_transfer,
                    std::shared_ptr<gloo_api::Transfer> transfer, bool receiving) {
    return std::make_shared<DeferredWork>(
        ctx.what,
        [transfer, size_transfer, size, keep = data, receiving](std::chrono::milliseconds timeout) {
          const auto start = std::chrono::steady_clock::now();
          transfer->wait(timeout);
          size_transfer->wait(left_of(timeout, start));
          if (receiving && *size != keep.nbytes()) {
            throw CollectiveError(
                dtrain::detail::concat("received ", *size, " bytes, expected ", keep.nbytes(),
                                       " (the sender's tensor has a different size or dtype)"));
          }
        },
        traits().timeout);
  }
};

ProcessGroupGloo::ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size,
                                   GlooOptions options, std::string name)
    : ProcessGroup(rank, size, std::move(name)),
      impl_(std::make_unique<Impl>(*this, options.timeout)) {
  DTRAIN_CHECK(store != nullptr, "ProcessGroupGloo '", this->name(), "': the store is null");
  set_transport(*impl_);
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

}  // namespace dtrain::dist
