// TcpStore: a Store served over TCP by one process (rank 0 or the
// launcher) and used by every process of the job.
//
//   // rank 0, or the launcher
//   TcpStore store(TcpStoreOptions().host("10.0.0.1").port(29500).is_server(true));
//   // everyone else
//   TcpStore store(TcpStoreOptions().host("10.0.0.1").port(29500));
//
// The server runs on its own thread inside the TcpStore that owns it (or
// inside a standalone TcpStoreServer). A client that sends a malformed
// message or vanishes mid-request is cut off; everyone else is served on.
// Clients connect with retries until the timeout, so start order does not
// matter. All calls are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "dtrain/store/store.h"

namespace dtrain::store {

class TcpStoreServer;

struct TcpStoreOptions {
  TcpStoreOptions& host(std::string value) {
    host_ = std::move(value);
    return *this;
  }
  TcpStoreOptions& port(std::uint16_t value) {
    port_ = value;
    return *this;
  }
  TcpStoreOptions& is_server(bool value) {
    is_server_ = value;
    return *this;
  }
  TcpStoreOptions& timeout(std::chrono::milliseconds value) {
    timeout_ = value;
    return *this;
  }

  // Server address: a name, an IPv4 or an IPv6 address ("::1", no
  // brackets). The server listens on every interface of both families when
  // it is the host itself, so "127.0.0.1" and "::1" work for single-machine
  // jobs. A client tries every address a name resolves to.
  std::string host_ = "127.0.0.1";
  // 0 with is_server: any free port (read it back with TcpStore::port()).
  std::uint16_t port_ = 29500;
  bool is_server_ = false;
  std::chrono::milliseconds timeout_ = Store::kDefaultTimeout;
};

// The server alone, for processes (like a launcher) that only host the store.
class TcpStoreServer {
 public:
  // Listens on every interface at `port` (0: any free one), for IPv4 and
  // IPv6 clients alike (IPv4 only where this host has no IPv6). Throws
  // StoreError naming the port when it cannot (e.g. already in use).
  explicit TcpStoreServer(std::uint16_t port);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  std::uint16_t port() const;
  // Clients cut off so far for sending malformed messages.
  std::int64_t rejected_clients() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

class TcpStore : public Store {
 public:
  explicit TcpStore(const TcpStoreOptions& options);
  ~TcpStore() override;

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

  const std::string& host() const { return host_; }
  std::uint16_t port() const { return port_; }
  // Whether this TcpStore runs the server (is_server), which stops with it.
  bool hosts_server() const { return server_ != nullptr; }

 private:
  struct Connection;
  std::string host_;
  std::uint16_t port_;
  std::unique_ptr<TcpStoreServer> server_;
  std::unique_ptr<Connection> connection_;
};

}  // namespace dtrain::store
