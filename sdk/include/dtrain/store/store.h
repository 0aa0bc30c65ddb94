// A key-value store shared by the processes of a job: rendezvous, NCCL id
// exchange, barriers and elastic membership all go through it.
//
// Implementations: TcpStore (a server in one process, clients everywhere),
// FileStore (a file on a shared file system) and PrefixStore (a namespace
// inside another store). All are thread-safe. Every call that may wait
// (get, wait) waits at most timeout() and then throws StoreTimeoutError
// naming the keys; a broken connection or file throws StoreError.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "dtrain/util/errors.h"

namespace dtrain::store {

using Bytes = std::vector<std::uint8_t>;

class StoreError : public Error {
 public:
  using Error::Error;
};

class StoreTimeoutError : public StoreError {
 public:
  using StoreError::StoreError;
};

class Store {
 public:
  static constexpr std::chrono::milliseconds kDefaultTimeout{std::chrono::minutes(5)};

  explicit Store(std::chrono::milliseconds timeout = kDefaultTimeout) : timeout_(timeout) {}
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  virtual void set(const std::string& key, const Bytes& value) = 0;
  // Waits up to timeout() for the key to exist, then returns its value.
  virtual Bytes get(const std::string& key) = 0;
  // Adds delta to the integer stored at key (0 when absent) and returns the sum.
  virtual std::int64_t add(const std::string& key, std::int64_t delta) = 0;
  // Sets key to desired if its value equals expected (or it is absent and
  // expected is empty); returns the value after the call.
  virtual Bytes compare_set(const std::string& key, const Bytes& expected,
                            const Bytes& desired) = 0;
  // True when every key exists; never waits.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Waits until every key exists, up to `timeout`.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }
  // Removes key; true when it existed.
  virtual bool delete_key(const std::string& key) = 0;
  virtual std::int64_t num_keys() = 0;

  void set(const std::string& key, const std::string& value) {
    set(key, Bytes(value.begin(), value.end()));
  }
  std::string get_string(const std::string& key) {
    const Bytes value = get(key);
    return std::string(value.begin(), value.end());
  }

  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

 private:
  std::chrono::milliseconds timeout_;
};

}  // namespace dtrain::store
