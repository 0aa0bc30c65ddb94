// The boundary between dtrain::sdk and its Gloo backend library.
//
// Note [Two Glooes in one process]: the torch wheel's libtorch_cpu.so
// carries its own build of Gloo and exports its symbols (gloo::...), and
// Debian's libgloo.so defines the same names for a different version.
// dtrain's Gloo code therefore lives in its own shared library,
// libdtrain_gloo.so, which links Debian's libgloo and no LibTorch, and the
// SDK loads it with dlopen(RTLD_LOCAL | RTLD_DEEPBIND): its own gloo
// symbols are found before the global ones, and none of them become global
// for LibTorch to bind to. Only this header crosses the boundary: plain
// pointers, std types and a virtual interface -- no at::Tensor, no gloo type.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dtrain::dist::gloo_api {

enum class DType : int { kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8 };
enum class Reduce : int { kSum, kProduct, kMin, kMax };

inline std::size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kUInt8:
      return 1;
  }
  return 0;
}

// How Gloo's rendezvous reaches dtrain's Store.
struct StoreCallbacks {
  std::function<void(const std::string&, const std::vector<char>&)> set;
  std::function<std::vector<char>(const std::string&)> get;
  std::function<void(const std::vector<std::string>&, std::chrono::milliseconds)> wait;
};

struct ConnectOptions {
  int rank = 0;
  int size = 1;
  std::string iface;     // network interface (GLOO_SOCKET_IFNAME); empty: by hostname
  std::string hostname;  // address to bind; empty: this host's name
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

// A point-to-point transfer in flight; wait() returns when it is done.
class Transfer {
 public:
  virtual ~Transfer() = default;
  // Throws std::runtime_error naming the peer when it fails or times out.
  virtual void wait(std::chrono::milliseconds timeout) = 0;
};

// One connected group. Each call blocks until its collective is done and
// throws std::runtime_error (naming the op and the problem) on failure or
// timeout. Calls must come from one thread at a time.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual void all_reduce(void* data, std::size_t count, DType dtype, Reduce op,
                          std::chrono::milliseconds timeout) = 0;
  virtual void reduce(void* data, std::size_t count, DType dtype, Reduce op, int root,
                      std::chrono::milliseconds timeout) = 0;
  virtual void broadcast(void* data, std::size_t count, DType dtype, int root,
                         std::chrono::milliseconds timeout) = 0;
  // out holds size * count elements.
  virtual void all_gather(const void* in, void* out, std::size_t count, DType dtype,
                          std::chrono::milliseconds timeout) = 0;
  // out (root only) holds size * count elements.
  virtual void gather(const void* in, void* out, std::size_t count, DType dtype, int root,
                      std::chrono::milliseconds timeout) = 0;
  // in (root only) holds size * count elements.
  virtual void scatter(const void* in, void* out, std::size_t count, DType dtype, int root,
                       std::chrono::milliseconds timeout) = 0;
  // in and out hold size * count elements; block i of in goes to rank i.
  virtual void all_to_all(const void* in, void* out, std::size_t count, DType dtype,
                          std::chrono::milliseconds timeout) = 0;
  virtual void barrier(std::chrono::milliseconds timeout) = 0;
  virtual std::unique_ptr<Transfer> send(const void* data, std::size_t bytes, int dst,
                                         std::uint64_t tag) = 0;
  virtual std::unique_ptr<Transfer> recv(void* data, std::size_t bytes, int src,
                                         std::uint64_t tag) = 0;
};

}  // namespace dtrain::dist::gloo_api

// The one symbol the SDK looks up in libdtrain_gloo.so. Throws
// std::runtime_error when the group cannot connect.
extern "C" dtrain::dist::gloo_api::Communicator* dtrain_gloo_connect(
    const dtrain::dist::gloo_api::ConnectOptions* options,
    const dtrain::dist::gloo_api::StoreCallbacks* store);
