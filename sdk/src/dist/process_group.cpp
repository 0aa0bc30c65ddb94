// The ProcessGroup front end (process_group.h): every operation is named,
// checked, timed, staged and flattened here, once for every backend; the
// backend's transport (transport.h) moves the bytes.
#include "dtrain/dist/process_group.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <functional>
#include <numeric>

#include "collective_args.h"
#include "dtrain/dist/debug_process_group.h"
#include "flight_recorder.h"
#include "transport.h"

namespace dtrain::dist {

using namespace detail;

namespace {

const char* name_of(ReduceOp op) {
  constexpr std::array<const char*, 5> kNames = {"SUM", "PRODUCT", "MIN", "MAX", "AVG"};
  const auto index = static_cast<std::size_t>(op);
  return index < kNames.size() ? kNames[index] : "UNKNOWN";
}

}  // namespace

std::string to_string(ReduceOp op) {
  return name_of(op);
}

namespace {

// What every tensor a backend moves must be: defined, on the backend's
// device, of a dtype it moves, and within its limits.
void check_tensor(const ProcessGroup& group, const Transport& t, const at::Tensor& tensor,
                  const std::string& what) {
  const TransportTraits& traits = t.traits();
  DTRAIN_CHECK(tensor.defined(), what, ": the tensor is undefined");
  DTRAIN_CHECK(tensor.device().type() == traits.device, what, ": ", traits.takes, ", got one on ",
               tensor.device().str(), " (", traits.advice, ")");
  dtype_index(tensor.scalar_type(), group.backend_name());
  t.check_size(static_cast<std::int64_t>(tensor.nbytes()), what);
}

// A list of one tensor per rank shaped like `like`, whose blocks together
// fit one call of the transport.
void check_blocks(const Transport& t, const std::vector<at::Tensor>& list, const at::Tensor& like,
                  int size, const std::string& what, const char* name) {
  check_one_per_rank(list, like, size, what, name);
  t.check_size(like.numel() * size, what);
}

// gather's and scatter's checks: `tensor` on every rank, `list` on the
// root. True on the root.
bool check_rooted(const ProcessGroup& group, const Transport& t, const at::Tensor& tensor,
                  const std::vector<at::Tensor>& list, int root, const std::string& what,
                  const char* name) {
  check_tensor(group, t, tensor, what);
  check_root(root, group.size(), what);
  if (group.rank() != root) {
    return false;
  }
  check_blocks(t, list, tensor, group.size(), what, name);
  return true;
}

// all_to_all's blocks: one per rank in each list; the shape of inputs[0]
// everywhere, or only its dtype where the transport takes uneven blocks.
void check_all_to_all(const ProcessGroup& group, const Transport& t,
                      const std::vector<at::Tensor>& outputs, const std::vector<at::Tensor>& inputs,
                      const std::string& what) {
  check_count(inputs, group.size(), what, "inputs");
  check_count(outputs, group.size(), what, "outputs");
  for (int r = 0; r < group.size(); ++r) {
    check_tensor(group, t, inputs[r], what);
    if (!t.traits().uneven_all_to_all) {
      check_same(inputs[0], inputs[r], what);
      check_same(inputs[0], outputs[r], what);
      continue;
    }
    check_tensor(group, t, outputs[r], what);
    DTRAIN_CHECK(outputs[r].scalar_type() == inputs[0].scalar_type() &&
                     inputs[r].scalar_type() == inputs[0].scalar_type(),
                 what, ": every tensor must have the dtype ", inputs[0].scalar_type(),
                 " of inputs[0]; inputs[", r, "] is ", inputs[r].scalar_type(), ", outputs[", r,
                 "] is ", outputs[r].scalar_type());
  }
  t.check_size(inputs[0].numel() * group.size(), what);
}

void check_point_to_point(const ProcessGroup& group, const Transport& t, const at::Tensor& tensor,
                          int peer, int tag, const std::string& what) {
  check_tensor(group, t, tensor, what);
  check_peer(peer, group.rank(), group.size(), what);
  DTRAIN_CHECK(tensor.is_contiguous(), what, ": the tensor must be contiguous");
  t.check_tag(tag, what);
}

// Note [Tensors on a device the backend does not move] (collective_args.h).
bool staged(const Transport& t, const at::Tensor& tensor) {
  const auto& from = t.traits().stages_from;
  return from && tensor.defined() && tensor.device().type() == *from;
}

WorkPtr stage(Transport& t, const std::string& what, const std::vector<at::Tensor>& inputs,
              const std::vector<at::Tensor*>& outputs, const StagedRun& run) {
  return staged_on(t.staging_device(what), *t.traits().stages_from, what, inputs, outputs, run);
}

// A reduction as the transport runs it: AVG, where it lacks it, as SUM
// that the front end then divides by the group's size.
struct Reduction {
  ReduceOp moved;
  bool divide;
};

Reduction reduction(const Transport& t, ReduceOp op) {
  const bool emulated = op == ReduceOp::kAvg && !t.traits().reduces_avg;
  return {emulated ? ReduceOp::kSum : op, emulated};
}

// The caller's tensors an operation reads or writes.
std::vector<at::Tensor> touched(std::vector<at::Tensor> tensors,
                                const std::vector<at::Tensor>& more) {
  tensors.insert(tensors.end(), more.begin(), more.end());
  return tensors;
}

// Note [A collective's cost]
// The front end's own cost is paid on every call, and on a small message it
// is a visible part of the collective's time (architecture.md, MPI). So a
// call builds its description once, borrows callables (c10::function_ref)
// wherever they run before it returns, takes its turn at the call when it
// can (Note [A turn taken at the call], work_queue.h), and writes its
// flight recorder entry straight into a reused slot.

// Note [Flight recorder] (flight_recorder.h): the collective as recorded.
void fill_entry(RecordedCollective& entry, const ProcessGroup& group, const OpContext& ctx,
                c10::ArrayRef<at::Tensor> tensors) {
  entry.group = group.name();
  entry.backend = group.backend_name();
  entry.group_ranks = group.global_ranks();
  entry.seq = ctx.seq;
  entry.op = ctx.op;
  entry.timeout_ms = ctx.timeout.count();
  entry.input_sizes.resize(tensors.size());
  entry.input_dtypes.resize(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const c10::IntArrayRef sizes = tensors[i].sizes();
    entry.input_sizes[i].assign(sizes.begin(), sizes.end());
    entry.input_dtypes[i] = c10::toString(tensors[i].scalar_type());
  }
}

// Starts a numbered collective, recorded from its scheduling to its end:
// `start` gets `ctx` with the entry's id, which the transport's turn marks
// (run_in_turn, transport.h).
WorkPtr start_recorded(const ProcessGroup& group, OpContext& ctx, c10::ArrayRef<at::Tensor> tensors,
                       c10::function_ref<WorkPtr(const OpContext&)> start) {
  FlightRecorder& recorder = flight_recorder();
  ctx.record_id =
      recorder.record([&](RecordedCollective& entry) { fill_entry(entry, group, ctx, tensors); });
  try {
    return start(ctx);
  } catch (...) {
    recorder.finished(ctx.record_id, false);
    throw;
  }
}

// A launched operation's Work, attached to its entry, whose state it may
// later say more of (flight_recorder.h). One taken at the call finished in
// its turn, which recorded how.
WorkPtr attached(const OpContext& ctx, WorkPtr work) {
  flight_recorder().attach(ctx.record_id, work);
  return work;
}

// Numbers and records an operation on `tensors` (all on one device: the
// NCCL group's communicator lives on one GPU), then starts it with `start`.
WorkPtr issue_with(const ProcessGroup& group, Transport& t, OpContext ctx,
                   c10::ArrayRef<at::Tensor> tensors,
                   c10::function_ref<WorkPtr(const OpContext&)> start) {
  for (const auto& tensor : tensors) {
    DTRAIN_CHECK(tensor.device() == tensors.front().device(), ctx.what,
                 ": every tensor must be on ", tensors.front().device().str(), ", got one on ",
                 tensor.device().str());
  }
  return t.numbered(std::move(ctx), [&](OpContext& numbered) {
    return start_recorded(group, numbered, tensors, start);
  });
}

// Issues an operation through the transport's launch(), which takes
// `tensors` once they are recorded.
WorkPtr issue(const ProcessGroup& group, Transport& t, OpContext ctx,
              std::vector<at::Tensor> tensors, const AtIssue& at_issue) {
  return issue_with(group, t, std::move(ctx), tensors, [&](const OpContext& c) {
    return attached(c, t.launch(c, std::move(tensors), at_issue));
  });
}

// Issues an operation with nothing to do at issue: its turn taken at the
// call where the transport can (Transport::run_now), else launched with a
// copy of `in_turn`.
template <typename Turn>
WorkPtr issue_in_turn(const ProcessGroup& group, Transport& t, OpContext ctx,
                      const at::Tensor& tensor, Turn& in_turn) {
  return issue_with(group, t, std::move(ctx), tensor, [&](const OpContext& c) {
    if (WorkPtr done = t.run_now(c, in_turn)) {
      return done;
    }
    return attached(c, t.launch(c, {tensor}, in_turn_only(in_turn)));
  });
}

std::string with_root(const std::string& op, int root) {
  return op + "(root " + std::to_string(root) + ")";
}

std::string reduced(const char* op, ReduceOp reduce_op) {
  std::string name = op;  // "all_reduce(SUM)" stays within the string's own buffer
  name.append("(").append(name_of(reduce_op)).append(")");
  return name;
}

// gather's part on every rank: the root's blocks (`outputs`, empty
// elsewhere) arrive in one flat buffer, then split.
AtIssue gather_steps(Transport& t, const at::Tensor& input, std::vector<at::Tensor> outputs,
                     int root, int size) {
  return [&t, input, outputs, root, size]() -> InTurn {
    return [&t, in = input.contiguous(), outputs, root, size](const OpContext& c) mutable {
      const bool is_root = !outputs.empty();
      at::Tensor flat = is_root ? at::empty({in.numel() * size}, in.options()) : at::Tensor();
      t.gather(in, flat, root, c);
      if (is_root) {
        split_into(flat, outputs);
      }
    };
  };
}

// scatter's: the root's blocks (`inputs`, empty elsewhere), flattened at the call.
AtIssue scatter_steps(Transport& t, at::Tensor output, std::vector<at::Tensor> inputs, int root) {
  return [&t, output, inputs, root]() -> InTurn {
    const at::Tensor flat = inputs.empty() ? at::Tensor() : flat_cat(inputs);
    return [&t, output, flat, root](const OpContext& c) mutable {
      on_contiguous(output, [&](at::Tensor& data) { t.scatter(flat, data, root, c); });
    };
  };
}

}  // namespace

ProcessGroup::ProcessGroup(int rank, int size, std::string name)
    : rank_(rank), size_(size), name_(std::move(name)) {
  DTRAIN_CHECK(size >= 1, "process group '", name_, "': size must be >= 1, got ", size);
  DTRAIN_CHECK(rank >= 0 && rank < size, "process group '", name_, "': rank ", rank,
               " is outside the world of size ", size);
  global_ranks_.resize(size_);
  std::iota(global_ranks_.begin(), global_ranks_.end(), 0);
}

void ProcessGroup::set_global_ranks(std::vector<int> ranks) {
  DTRAIN_CHECK(static_cast<int>(ranks.size()) == size_, "process group '", name_,
               "': ", ranks.size(), " global ranks for a group of size ", size_);
  DTRAIN_CHECK(
      std::adjacent_find(ranks.begin(), ranks.end(), std::greater_equal<>()) == ranks.end(),
      "process group '", name_, "': global ranks must be distinct and ascending");
  global_ranks_ = std::move(ranks);
}

void ProcessGroup::unsupported(const std::string& op) const {
  throw Error("backend " + backend_name() + " does not support " + op);
}

std::string ProcessGroup::describe(const std::string& op) const {
  // The group's part once, at the first description (backend_name() is
  // the derived class's by then): every operation builds one (Note [A
  // collective's cost]).
  std::call_once(described_once_, [this] {
    described_as_ = " on group '" + name_ + "' (" + backend_name() + "), rank " +
                    std::to_string(rank_) + " of " + std::to_string(size_);
  });
  std::string described;
  described.reserve(op.size() + described_as_.size());
  described.append(op).append(described_as_);
  return described;
}

void ProcessGroup::set_transport(Transport& transport) {
  transport_ = &transport;
}

void ProcessGroup::use_transport_of(const ProcessGroup& inner) {
  transport_ = &inner.transport();
}

void ProcessGroup::check_call(c10::function_ref<std::string()>, std::chrono::milliseconds) {}

Transport& ProcessGroup::transport() const {
  DTRAIN_CHECK(transport_ != nullptr, "process group '", name_, "' has no transport");
  return *transport_;
}

OpContext ProcessGroup::context(std::string op, std::chrono::milliseconds timeout) const {
  std::string what = describe(op);
  return {std::move(op), std::move(what),
          timeout.count() > 0 ? timeout : transport().traits().timeout, 0};
}

WorkPtr ProcessGroup::send(const at::Tensor& tensor, int dst, int tag) {
  const OpContext ctx = context("send to rank " + std::to_string(dst), {});
  check_point_to_point(*this, transport(), tensor, dst, tag, ctx.what);
  return transport().send(tensor, dst, tag, ctx);
}

WorkPtr ProcessGroup::recv(at::Tensor& tensor, int src, int tag) {
  const OpContext ctx = context("recv from rank " + std::to_string(src), {});
  check_point_to_point(*this, transport(), tensor, src, tag, ctx.what);
  return transport().recv(tensor, src, tag, ctx);
}

WorkPtr ProcessGroup::broadcast(at::Tensor& tensor, const BroadcastOptions& options) {
  return in_place(tensor, InPlace::kBroadcast, ReduceOp::kSum, options.root, options.timeout);
}

WorkPtr ProcessGroup::all_reduce(at::Tensor& tensor, const AllreduceOptions& options) {
  return in_place(tensor, InPlace::kAllReduce, options.op, rank(), options.timeout);
}

WorkPtr ProcessGroup::reduce(at::Tensor& tensor, const ReduceOptions& options) {
  return in_place(tensor, InPlace::kReduce, options.op, options.root, options.timeout);
}

WorkPtr ProcessGroup::in_place(at::Tensor& tensor, InPlace kind, ReduceOp op, int root,
                               std::chrono::milliseconds timeout) {
  Transport& t = transport();
  OpContext ctx = context(
      kind == InPlace::kBroadcast ? "broadcast from rank " + std::to_string(root)
      : kind == InPlace::kReduce  ? reduced("reduce", op) + " to rank " + std::to_string(root)
                                  : reduced("all_reduce", op),
      timeout);
  if (staged(t, tensor)) {
    return stage(t, ctx.what, {}, {&tensor}, [&](auto&, std::vector<at::Tensor>& out) {
      return in_place(out[0], kind, op, root, timeout);
    });
  }
  check_tensor(*this, t, tensor, ctx.what);
  if (kind != InPlace::kAllReduce) {
    check_root(root, size(), ctx.what);
  }
  if (kind != InPlace::kBroadcast) {
    check_avg(op, tensor, ctx.what);
  }
  check_call(
      [&] {
        const std::string call =
            kind == InPlace::kBroadcast ? with_root("broadcast", root)
            : kind == InPlace::kReduce
                ? "reduce(" + to_string(op) + ", root " + std::to_string(root) + ")"
                : ctx.op;
        return describe_call(call, {tensor});
      },
      timeout);
  // The root alone has a result to divide (every rank is the "root" of all_reduce).
  const Reduction how = reduction(t, op);
  const bool divide = how.divide && rank() == root;
  auto in_turn = [&t, tensor, kind, how, root, divide, n = size()](const OpContext& c) mutable {
    on_contiguous(tensor, [&](at::Tensor& data) {
      if (kind == InPlace::kBroadcast) {
        t.broadcast(data, root, c);
      } else if (kind == InPlace::kReduce) {
        t.reduce(data, how.moved, root, c);
      } else {
        t.all_reduce(data, how.moved, c);
      }
      if (divide) {
        data.div_(n);
      }
    });
  };
  return issue_in_turn(*this, t, std::move(ctx), tensor, in_turn);
}

WorkPtr ProcessGroup::all_gather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                                 const CollectiveOptions& options) {
  Transport& t = transport();
  OpContext ctx = context("all_gather", options.timeout);
  if (staged(t, input)) {
    return stage(t, ctx.what, {input}, pointers_to(outputs),
                 [&](std::vector<at::Tensor>& in, std::vector<at::Tensor>& out) {
                   return all_gather(out, in[0], options);
                 });
  }
  check_tensor(*this, t, input, ctx.what);
  check_blocks(t, outputs, input, size(), ctx.what, "outputs");
  check_call([&] { return describe_call("all_gather", {input}); }, options.timeout);
  return issue(*this, t, std::move(ctx), touched({input}, outputs),
               [&t, outputs, input, n = size()]() -> InTurn {
                 return [&t, outputs, in = input.contiguous(), n](const OpContext& c) mutable {
                   at::Tensor flat = at::empty({in.numel() * n}, in.options());
                   t.all_gather(in, flat, c);
                   split_into(flat, outputs);
                 };
               });
}

WorkPtr ProcessGroup::gather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                             const RootOptions& options) {
  return rooted(Rooted::kGather, input, outputs, options);
}

WorkPtr ProcessGroup::scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                              const RootOptions& options) {
  return rooted(Rooted::kScatter, output, inputs, options);
}

WorkPtr ProcessGroup::rooted(Rooted kind, const at::Tensor& tensor,
                             const std::vector<at::Tensor>& list, const RootOptions& options) {
  Transport& t = transport();
  const bool gathers = kind == Rooted::kGather;
  const std::string name = gathers ? "gather" : "scatter";
  const int root = options.root;
  OpContext ctx = context(name + (gathers ? " to rank " : " from rank ") + std::to_string(root),
                          options.timeout);
  const bool is_root =
      check_rooted(*this, t, tensor, list, root, ctx.what, gathers ? "outputs" : "inputs");
  check_call([&] { return describe_call(with_root(name, root), {tensor}); }, options.timeout);
  const std::vector<at::Tensor> blocks = is_root ? list : std::vector<at::Tensor>{};
  return issue(*this, t, std::move(ctx), touched({tensor}, blocks),
               gathers ? gather_steps(t, tensor, blocks, root, size())
                       : scatter_steps(t, tensor, blocks, root));
}

WorkPtr ProcessGroup::reduce_scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                                     const AllreduceOptions& options) {
  Transport& t = transport();
  OpContext ctx = context(reduced("reduce_scatter", options.op), options.timeout);
  check_tensor(*this, t, output, ctx.what);
  check_avg(options.op, output, ctx.what);
  check_blocks(t, inputs, output, size(), ctx.what, "inputs");
  check_call([&] { return describe_call(reduced("reduce_scatter", options.op), {output}); },
             options.timeout);
  return issue(*this, t, std::move(ctx), touched({output}, inputs),
               [&t, output, inputs, how = reduction(t, options.op), n = size()]() -> InTurn {
                 return [&t, output, flat = flat_cat(inputs), how, n](const OpContext& c) mutable {
                   on_contiguous(output, [&](at::Tensor& data) {
                     t.reduce_scatter(flat, data, how.moved, c);
                     if (how.divide) {
                       data.div_(n);
                     }
                   });
                 };
               });
}

WorkPtr ProcessGroup::all_to_all(std::vector<at::Tensor>& outputs,
                                 const std::vector<at::Tensor>& inputs,
                                 const CollectiveOptions& options) {
  Transport& t = transport();
  OpContext ctx = context("all_to_all", options.timeout);
  check_all_to_all(*this, t, outputs, inputs, ctx.what);
  // Blocks may differ in size between ranks; their number and dtype may not.
  check_call(
      [&] {
        return "all_to_all(" + std::to_string(inputs.size()) + " blocks) " +
               dtype_name(inputs[0].scalar_type());
      },
      options.timeout);
  BlockSizes blocks;
  for (int r = 0; r < size(); ++r) {
    blocks.in.push_back(inputs[r].numel());
    blocks.out.push_back(outputs[r].numel());
  }
  return issue(*this, t, std::move(ctx), touched(inputs, outputs),
               [&t, outputs, inputs, blocks]() -> InTurn {
                 return [&t, outputs, in = flat_cat(inputs), blocks](const OpContext& c) mutable {
                   const auto total =
                       std::accumulate(blocks.out.begin(), blocks.out.end(), std::int64_t{0});
                   at::Tensor out = at::empty({total}, in.options());
                   t.all_to_all(in, out, blocks, c);
                   split_into(out, outputs);
                 };
               });
}

WorkPtr ProcessGroup::barrier(const CollectiveOptions& options) {
  Transport& t = transport();
  check_call([] { return std::string("barrier"); }, options.timeout);
  // The transport issues barrier itself: recorded from its Work alone.
  return t.numbered(context("barrier", options.timeout), [&](OpContext& c) {
    return start_recorded(*this, c, {},
                          [&](const OpContext& traced) { return attached(traced, t.barrier(c)); });
  });
}

}  // namespace dtrain::dist
