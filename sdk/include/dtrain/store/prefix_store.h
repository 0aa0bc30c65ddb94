// PrefixStore: a namespace inside another store. Every key is stored as
// "<prefix>/<key>", so groups, rendezvous rounds and restarts can share one
// server without their keys colliding.
#pragma once

#include <memory>
#include <string>

#include "dtrain/store/store.h"

namespace dtrain::store {

class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> inner);

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  bool delete_key(const std::string& key) override;
  // Counts the keys of the whole inner store: stores keep no per-prefix index.
  std::int64_t num_keys() override;
  using Store::set;
  using Store::wait;

  const std::string& prefix() const { return prefix_; }
  const std::shared_ptr<Store>& inner() const { return inner_; }

 private:
  std::string full(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> full(const std::vector<std::string>& keys) const;

  std::string prefix_;
  std::shared_ptr<Store> inner_;
};

}  // namespace dtrain::store
