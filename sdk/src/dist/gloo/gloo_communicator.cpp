// libdtrain_gloo.so: dtrain's collectives on Debian's Gloo, behind the
// plain interface of gloo_api.h (see Note [Two Glooes in one process]).
#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>

#include "gloo_api.h"
#include "reduce_functions.h"

namespace dtrain::dist::gloo_api {

namespace {

// Gloo's rendezvous talks to dtrain's Store through the callbacks.
class CallbackStore : public ::gloo::rendezvous::Store {
 public:
  explicit CallbackStore(const StoreCallbacks& callbacks) : callbacks_(callbacks) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    callbacks_.set(key, data);
  }
  std::vector<char> get(const std::string& key) override { return callbacks_.get(key); }
  void wait(const std::vector<std::string>& keys) override {
    callbacks_.wait(keys, std::chrono::minutes(5));
  }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    callbacks_.wait(keys, timeout);
  }

 private:
  StoreCallbacks callbacks_;
};

class GlooTransfer : public Transfer {
 public:
  GlooTransfer(std::unique_ptr<::gloo::transport::UnboundBuffer> buffer, bool sending, int peer)
      : buffer_(std::move(buffer)), sending_(sending), peer_(peer) {}

  void wait(std::chrono::milliseconds timeout) override {
    bool done = false;
    try {
      done = sending_ ? buffer_->waitSend(timeout) : buffer_->waitRecv(timeout);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string(sending_ ? "send to" : "recv from") + " rank " +
                               std::to_string(peer_) + " failed: " + e.what());
    }
    if (!done) {
      throw std::runtime_error(std::string(sending_ ? "send to" : "recv from") + " rank " +
                               std::to_string(peer_) + " did not complete within " +
                               std::to_string(timeout.count()) + " ms");
    }
  }

 private:
  std::unique_ptr<::gloo::transport::UnboundBuffer> buffer_;
  bool sending_;
  int peer_;
};

class GlooCommunicator : public Communicator {
 public:
  explicit GlooCommunicator(std::shared_ptr<::gloo::Context> context)
      : context_(std::move(context)) {}

  void all_reduce(void* data, std::size_t count, DType dtype, Reduce op,
                  std::chrono::milliseconds timeout) override {
    run(
        "all_reduce", count,
        [&]<typename T>(T*) {
          ::gloo::AllreduceOptions opts(context_);
          opts.setOutput<T>(static_cast<T*>(data), count);
          opts.setReduceFunction(reduce_function<T>(op));
          opts.setTag(next_tag());
          opts.setTimeout(timeout);
          ::gloo::allreduce(opts);
        },
        dtype);
  }

  void reduce(void* data, std::size_t count, DType dtype, Reduce op, int root,
              std::chrono::milliseconds timeout) override {
    run(
        "reduce", count,
        [&]<typename T>(T*) {
          // Non-roots keep their input: the reduction lands in scratch space there.
          std::vector<T> scratch(context_->rank == root ? 0 : count);
          ::gloo::ReduceOptions opts(context_);
          if (context_->rank == root) {
            opts.setOutput<T>(static_cast<T*>(data), count);
          } else {
            opts.setInput<T>(static_cast<T*>(data), count);
            opts.setOutput<T>(scratch.data(), count);
          }
          opts.setRoot(root);
          opts.setReduceFunction(reduce_function<T>(op));
          opts.setTag(next_tag());
          opts.setTimeout(timeout);
          ::gloo::reduce(opts);
        },
        dtype);
  }

  void broadcast(void* data, std::size_t count, DType dtype, int root,
                 std::chrono::milliseconds timeout) override {
    run(
        "broadcast", count,
        [&]<typename T>(T*) {
          ::gloo::BroadcastOptions opts(context_);
          opts.setOutput<T>(static_cast<T*>(data), count);
          opts.setRoot(root);
          opts.setTag(next_tag());
          opts.setTimeout(timeout);
          ::gloo::broadcast(opts);
        },
        dtype);
  }

  void all_gather(const void* in, void* out, std::size_t count, DType dtype,
                  std::chrono::milliseconds timeout) override {
    run(
        "all_gather", count,
        [&]<typename T>(T*) {
          ::gloo::AllgatherOptions opts(context_);
          opts.setInput<T>(const_cast<T*>(static_cast<const T*>(in)), count);
          opts.setOutput<T>(static_cast<T*>(out), count * context_->size);
          opts.setTag(next_tag());
          opts.setTimeout(timeout);
          ::gloo::allgather(opts);
        },
        dtype);
  }

  void gather(const void* in, void* out, std::size_t count, DType dtype, int root,
              std::chrono::milliseconds timeout) override {
    run(
        "gather", count,
        [&]<typename T>(T*) {
          ::gloo::GatherOptions opts(context_);
          opts.setInput<T>(const_cast<T*>(static_cast<const T*>(in)), count);
          if (context_->rank == root) {
            opts.setOutput<T>(static_cast<T*>(out), count * context_->size);
          }
          opts.setRoot(root);
          opts.setTag(next_tag());
          opts.setTimeout(timeout);
          ::gloo::gather(opts);
        },
        dtype);
  }

  void scatter(const void* in, void* out, std::size_t count, DType dtype, int root,
               std::chrono::milliseconds timeout) override {
    run(
        "scatter", count,
        [&]<typename T>(T*) {
          ::gloo::ScatterOptions opts(context_);
          if (context_->rank == root) {
            std::vector<T*> blocks;
            for (int r = 0; r < context_->size; ++r) {
              blocks.push_back(const_cast<T*>(static_cast<const T*>(in)) + r * count);
            }
            opts.setInputs<T>(blocks, count);
          }
          opts.setOutput<T>(static_cast<T*>(out), count);
          opts.setRoot(root);
          opts.setTag(next_tag());
          opts.setTimeout(timeout);
          ::gloo::scatter(opts);
        },
        dtype);
  }

  void all_to_all(const void* in, void* out, std::size_t count, DType dtype,
                  std::chrono::milliseconds timeout) override {
    run(
        "all_to_all", count,
        [&]<typename T>(T*) {
          ::gloo::AlltoallOptions opts(context_);
          opts.setInput<T>(const_cast<T*>(static_cast<const T*>(in)), count * context_->size);
          opts.setOutput<T>(static_cast<T*>(out), count * context_->size);
          opts.setTag(next_tag());
          opts.setTimeout(timeout);
          ::gloo::alltoall(opts);
        },
        dtype);
  }

  void barrier(std::chrono::milliseconds timeout) override {
    try {
      ::gloo::BarrierOptions opts(context_);
      opts.setTag(next_tag());
      opts.setTimeout(timeout);
      ::gloo::barrier(opts);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("barrier failed: ") + e.what());
    }
  }

  std::unique_ptr<Transfer> send(const void* data, std::size_t bytes, int dst,
                                 std::uint64_t tag) override {
    auto buffer = context_->createUnboundBuffer(const_cast<void*>(data), bytes);
    buffer->send(dst, tag);
    return std::make_unique<GlooTransfer>(std::move(buffer), true, dst);
  }

  std::unique_ptr<Transfer> recv(void* data, std::size_t bytes, int src,
                                 std::uint64_t tag) override {
    auto buffer = context_->createUnboundBuffer(data, bytes);
    buffer->recv(src, tag);
    return std::make_unique<GlooTransfer>(std::move(buffer), false, src);
  }

 private:
  // Every rank issues collectives in the same order, so a counter gives
  // matching tags without any exchange.
  std::uint32_t next_tag() { return tag_++; }

  // Runs body<T> for dtype, skipping empty buffers (Gloo rejects them) and
  // naming the op in any error.
  template <typename Body>
  void run(const char* op, std::size_t count, Body&& body, DType dtype) {
    if (count == 0) {
      return;
    }
    try {
      visit_dtype(dtype, body);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string(op) + " failed: " + e.what());
    }
  }

  std::shared_ptr<::gloo::Context> context_;
  std::uint32_t tag_ = 1;
};

std::string this_hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) {
    return "127.0.0.1";
  }
  return name;
}

}  // namespace

}  // namespace dtrain::dist::gloo_api

extern "C" dtrain::dist::gloo_api::Communicator* dtrain_gloo_connect(
    const dtrain::dist::gloo_api::ConnectOptions* options,
    const dtrain::dist::gloo_api::StoreCallbacks* store) {
  using namespace dtrain::dist::gloo_api;
  ::gloo::transport::tcp::attr attr;
  if (!options->iface.empty()) {
    attr.iface = options->iface;
  } else {
    attr.hostname = options->hostname.empty() ? this_hostname() : options->hostname;
  }
  try {
    auto device = ::gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<::gloo::rendezvous::Context>(options->rank, options->size);
    context->setTimeout(options->timeout);
    CallbackStore callback_store(*store);
    context->connectFullMesh(callback_store, device);
    return new GlooCommunicator(context);
  } catch (const std::exception& e) {
    throw std::runtime_error(
        std::string("Gloo could not connect rank ") + std::to_string(options->rank) + " of " +
        std::to_string(options->size) + " (" +
        (attr.iface.empty() ? "host " + attr.hostname : "interface " + attr.iface) +
        "): " + e.what());
  }
}
