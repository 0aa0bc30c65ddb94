// TorchTcpStore: a client of PyTorch's TCPStore server (torch.distributed's
// wire protocol), so dtrain processes can use a store that PyTorch hosts:
// the one torchrun's agent keeps for its workers
// (TORCHELASTIC_USE_AGENT_STORE=True), or one a Python process started
// with torch.distributed.TCPStore(..., is_master=True).
//
//   TorchTcpStore store("10.0.0.1", 29500);  // MASTER_ADDR, MASTER_PORT
//   TorchTcpStore store("::1", 29500);       // IPv6: the address bare
//   store.set("ready", "1");
//
// Keys carry the "/" that PyTorch's own client puts in front of them, so
// Python's store.get("ready") sees what this client set. Waiting calls
// wait at most their timeout and then throw StoreTimeoutError; a
// connection that fails throws StoreError naming the address. dtrain's own
// TcpStore (tcp_store.h) speaks a different protocol and is what dtrun and
// rank 0 host. All calls are thread-safe (one request at a time).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dtrain/store/store.h"

namespace dtrain::store {

class TorchTcpStore : public Store {
 public:
  // Connects, retrying until `timeout` while the server is not up yet.
  TorchTcpStore(const std::string& host, std::uint16_t port,
                std::chrono::milliseconds timeout = kDefaultTimeout);
  ~TorchTcpStore() override;

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  bool delete_key(const std::string& key) override;
  std::int64_t num_keys() override;
  using Store::set;
  using Store::wait;

 private:
  struct Connection;
  std::unique_ptr<Connection> connection_;
};

}  // namespace dtrain::store
