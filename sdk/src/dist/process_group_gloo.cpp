// ProcessGroupGloo: the Gloo transport under the ProcessGroup front end
// (transport.h): each collective runs on the group's worker thread on flat
// buffers, moved by LibTorch's Gloo group (Note [One Gloo in the process],
// gloo/torch_gloo.h); send and recv go straight to it.
#include "dtrain/dist/process_group_gloo.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "collective_args.h"
#include "dtrain/dist/store_names.h"
#include "dtrain/util/crash_trace.h"
#include "gloo/torch_gloo.h"
#include "interfaces.h"
#include "transport.h"
#include "work_queue.h"

namespace dtrain::dist {

// The transport interface (transport.h) and what the backends share.
using namespace detail;

namespace {

// The dtypes dtrain's backends share (collective_args.h); LibTorch's Gloo
// moves them all. Others are refused with the front end's words.
void check_dtype(const at::Tensor& tensor) {
  (void)dtype_index(tensor.scalar_type(), "gloo");
}

c10d::ReduceOp to_c10d(ReduceOp op) {
  using Op = c10d::ReduceOp::RedOpType;
  // AVG never comes: the front end reduces it as SUM and divides.
  return by_op<Op>(op, {Op::SUM, Op::PRODUCT, Op::MIN, Op::MAX, Op::SUM});
}

// Runs one of the engine's collectives to its end; its errors raise as
// they are (a timeout's words say "Timed out", which launch() looks for).
void run(const c10::intrusive_ptr<c10d::Work>& work) {
  work->wait();
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
// its own on a tag beside the user's, and a recv checks it once both have
// arrived: "received 12 bytes, expected 16", as the mpi backend says it.
// Both messages are posted at once on both sides, so they travel together
// and cost no extra round trip; each stream of sizes and of data keeps its
// order per peer and tag, so several messages on one tag still pair up.
// A message larger than the recv's tensor is refused by Gloo itself,
// which ends the process (docs/design/decisions.md, Gloo backend); the size
// arrives too late to prevent that. LibTorch's Gloo takes tags from 0 to
// 2^31 - 1 and its collectives use slots from 2^56 up, so user tags are
// below 2^30 and a size travels on its tag + 2^30.
constexpr int kSizeTags = 1 << 30;

int size_tag(int tag) {
  return kSizeTags + tag;
}

// What is left of `timeout` since `start`, at least 1 ms (Gloo reads 0 as
// "the context's default").
std::chrono::milliseconds left_of(std::chrono::milliseconds timeout,
                                  std::chrono::steady_clock::time_point start) {
  const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  return std::max(timeout - spent, std::chrono::milliseconds(1));
}

// The group's store, which remembers whether one of its waits timed out:
// LibTorch's Gloo meets through it (as a c10d::Store, c10d_store.h), which
// hands every store error on as one c10 type, so connecting asks this
// whether a rank's address did not come in time.
class GroupStore : public PrefixStore {
 public:
  using PrefixStore::PrefixStore;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    try {
      PrefixStore::wait(keys, timeout);
    } catch (const StoreTimeoutError&) {
      timed_out = true;
      throw;
    }
  }
  using PrefixStore::wait;
  std::atomic<bool> timed_out{false};
};

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

  c10::intrusive_ptr<c10d::Backend> engine;
  ProcessGroup& group;
  // For Note [Which rank a timeout waited on] (timeout_diagnosis.h).
  std::shared_ptr<Store> store;
  // Declared after engine, so it stops (draining its tasks) before engine goes.
  WorkQueue queue;

  c10::Device staging_device(const std::string&) override { return c10::Device(c10::kCPU); }

  // Note [A size beside every message]: tags up to 2^30 - 1.
  void check_tag(int tag, const std::string& what) const override {
    DTRAIN_CHECK(tag >= 0 && tag < kSizeTags, what, ": tag must be in 0..", kSizeTags - 1,
                 " (gloo), got ", tag);
  }

  // On the worker; a timeout raises the transport's error with the ranks it
  // waited on appended.
  WorkPtr launch(const OpContext& ctx, std::vector<at::Tensor>, const AtIssue& at_issue) override {
    return queue.enqueue(ctx.what, [this, ctx, in_turn = at_issue()] {
      try {
        run_in_turn(in_turn, ctx);
      } catch (const CollectiveError&) {
        throw;
      } catch (const c10::Error& e) {
        fail(ctx, e.msg());  // c10's checks; the stack is LibTorch's
      } catch (const std::exception& e) {
        fail(ctx, e.what());
      }
    });
  }

  [[noreturn]] void fail(const OpContext& ctx, const std::string& words) {
    if (looks_like_timeout(words)) {
      throw CollectiveTimeoutError(ctx.what + ": " + words + diagnose_timeout(store, group, ctx));
    }
    throw std::runtime_error(words);
  }

  // Gloo refuses empty buffers; every rank's is empty alike, so all skip.
  void broadcast(at::Tensor& data, int root, const OpContext& ctx) override {
    check_dtype(data);
    if (data.numel() == 0) {
      return;
    }
    std::vector<at::Tensor> tensors{data};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    options.timeout = ctx.timeout;
    run(engine->broadcast(tensors, options));
  }
  void all_reduce(at::Tensor& data, ReduceOp op, const OpContext& ctx) override {
    check_dtype(data);
    if (data.numel() == 0) {
      return;
    }
    std::vector<at::Tensor> tensors{data};
    c10d::AllreduceOptions options;
    options.reduceOp = to_c10d(op);
    options.timeout = ctx.timeout;
    run(engine->allreduce(tensors, options));
  }
  // Gloo's reduce leaves partial sums in the others' buffers: they reduce a copy.
  void reduce(at::Tensor& data, ReduceOp op, int root, const OpContext& ctx) override {
    check_dtype(data);
    if (data.numel() == 0) {
      return;
    }
    std::vector<at::Tensor> tensors{group.rank() == root ? data : data.clone()};
    c10d::ReduceOptions options;
    options.reduceOp = to_c10d(op);
    options.rootRank = root;
    options.timeout = ctx.timeout;
    run(engine->reduce(tensors, options));
  }
  void all_gather(const at::Tensor& in, at::Tensor& out, const OpContext& ctx) override {
    check_dtype(in);
    if (in.numel() == 0) {
      return;
    }
    // Gloo wants every block shaped as the rank's own: all flat.
    at::Tensor input = in.view(-1);
    at::Tensor output = out.view(-1);
    c10d::AllgatherOptions options;
    options.timeout = ctx.timeout;
    run(engine->_allgather_base(output, input, options));
  }
  void gather(const at::Tensor& in, at::Tensor& out, int root, const OpContext& ctx) override {
    check_dtype(in);
    if (in.numel() == 0) {
      return;
    }
    // Gloo wants every block shaped as the rank's own: all flat.
    std::vector<at::Tensor> inputs{in.view(-1)};
    std::vector<std::vector<at::Tensor>> outputs =
        root_blocks(out, group.rank(), root, group.size());
    c10d::GatherOptions options;
    options.rootRank = root;
    options.timeout = ctx.timeout;
    run(engine->gather(outputs, inputs, options));
  }
  void scatter(const at::Tensor& in, at::Tensor& out, int root, const OpContext& ctx) override {
    check_dtype(out);
    if (out.numel() == 0) {
      return;
    }
    std::vector<std::vector<at::Tensor>> inputs = root_blocks(in, group.rank(), root, group.size());
    std::vector<at::Tensor> outputs{out.view(-1)};
    c10d::ScatterOptions options;
    options.rootRank = root;
    options.timeout = ctx.timeout;
    run(engine->scatter(outputs, inputs, options));
  }
  void reduce_scatter(at::Tensor& in, at::Tensor& out, ReduceOp op, const OpContext& ctx) override {
    check_dtype(in);
    if (out.numel() == 0) {
      return;
    }
    at::Tensor input = in.view(-1);
    at::Tensor output = out.view(-1);
    c10d::ReduceScatterOptions options;
    options.reduceOp = to_c10d(op);
    options.timeout = ctx.timeout;
    run(engine->_reduce_scatter_base(output, input, options));
  }
  void all_to_all(const at::Tensor& in, at::Tensor& out, const BlockSizes&,
                  const OpContext& ctx) override {
    check_dtype(in);
    if (in.numel() == 0) {
      return;
    }
    at::Tensor input = in.view(-1);
    at::Tensor output = out.view(-1);
    std::vector<std::int64_t> even;  // empty: every block of one size
    c10d::AllToAllOptions options;
    options.timeout = ctx.timeout;
    run(engine->alltoall_base(output, input, even, even, options));
  }
  WorkPtr barrier(const OpContext& ctx) override {
    return launch(ctx, {}, in_turn_only([this](const OpContext& c) {
                    c10d::BarrierOptions options;
                    options.timeout = c.timeout;
                    run(engine->barrier(options));
                  }));
  }

  // Note [A size beside every message]: the size's transfer is posted first.
  WorkPtr send(const at::Tensor& data, int dst, int tag, const OpContext& ctx) override {
    std::vector<at::Tensor> size{at::tensor({static_cast<std::int64_t>(data.nbytes())})};
    std::vector<at::Tensor> tensors{data};
    return with_size(ctx, data, size[0],
                     posted(ctx, [&] { return engine->send(size, dst, size_tag(tag)); }),
                     posted(ctx, [&] { return engine->send(tensors, dst, tag); }), false);
  }
  WorkPtr recv(at::Tensor& data, int src, int tag, const OpContext& ctx) override {
    std::vector<at::Tensor> size{at::zeros({1}, at::kLong)};
    std::vector<at::Tensor> tensors{data};
    return with_size(ctx, data, size[0],
                     posted(ctx, [&] { return engine->recv(size, src, size_tag(tag)); }),
                     posted(ctx, [&] { return engine->recv(tensors, src, tag); }), true);
  }

  // A transfer posted at the call; one the engine refuses (a connection
  // lost to an earlier timeout) raises naming the operation.
  template <typename Post>
  static c10::intrusive_ptr<c10d::Work> posted(const OpContext& ctx, Post post) {
    try {
      return post();
    } catch (const c10::Error& e) {
      throw CollectiveError(ctx.what + ": " + e.msg());
    } catch (const std::exception& e) {
      throw CollectiveError(ctx.what + ": " + e.what());
    }
  }

  // Waits for a message and its size; a receive checks that they agree.
  WorkPtr with_size(const OpContext& ctx, const at::Tensor& data, at::Tensor size,
                    c10::intrusive_ptr<c10d::Work> size_transfer,
                    c10::intrusive_ptr<c10d::Work> transfer, bool receiving) {
    return std::make_shared<DeferredWork>(
        ctx.what,
        [transfer, size_transfer, size, keep = data, receiving](std::chrono::milliseconds timeout) {
          const auto start = std::chrono::steady_clock::now();
          finish_transfer(*transfer, timeout);
          finish_transfer(*size_transfer, left_of(timeout, start));
          if (!receiving) {
            return;
          }
          const auto bytes = static_cast<std::size_t>(size.item<std::int64_t>());
          if (bytes != keep.nbytes()) {
            throw CollectiveError(
                dtrain::detail::concat("received ", bytes, " bytes, expected ", keep.nbytes(),
                                       " (the sender's tensor has a different size or dtype)"));
          }
        },
        traits().timeout);
  }

  // A send's or recv's Work: false from wait() is its timeout.
  static void finish_transfer(c10d::Work& transfer, std::chrono::milliseconds timeout) {
    if (!transfer.wait(timeout)) {
      throw CollectiveTimeoutError(
          dtrain::detail::concat("did not complete within ", timeout.count(), " ms"));
    }
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
  auto group_store = std::make_shared<GroupStore>("gloo/" + this->name(), store);
  impl_->store = group_store;
  TorchGlooOptions connect;
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
    impl_->engine = connect_torch_gloo(group_store, connect);
  } catch (const c10::Error& e) {
    if (group_store->timed_out) {
      throw CollectiveTimeoutError(describe("connecting") +
                                   ": not every rank joined in time: " + e.msg());
    }
    throw CollectiveError(describe("connecting") + ": " + e.msg());
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
