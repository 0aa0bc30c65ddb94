#include "dtrain/store/prefix_store.h"

namespace dtrain::store {

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> inner)
    : Store(inner ? inner->timeout() : kDefaultTimeout),
      prefix_(std::move(prefix)),
      inner_(std::move(inner)) {
  DTRAIN_CHECK(inner_ != nullptr, "PrefixStore '", prefix_, "': the inner store is null");
}

std::vector<std::string> PrefixStore::full(const std::vector<std::string>& keys) const {
  std::vector<std::string> result;
  result.reserve(keys.size());
  for (const auto& key : keys) {
    result.push_back(full(key));
  }
  return result;
}

void PrefixStore::set(const std::string& key, const Bytes& value) {
  inner_->set(full(key), value);
}

Bytes PrefixStore::get(const std::string& key) {
  // Wait with this store's own timeout, then read: the inner store may be
  // shared with other prefixes and keeps its own.
  inner_->wait({full(key)}, timeout());
  return inner_->get(full(key));
}

std::int64_t PrefixStore::add(const std::string& key, std::int64_t delta) {
  return inner_->add(full(key), delta);
}

Bytes PrefixStore::compare_set(const std::string& key, const Bytes& expected,
                               const Bytes& desired) {
  return inner_->compare_set(full(key), expected, desired);
}

bool PrefixStore::check(const std::vector<std::string>& keys) {
  return inner_->check(full(keys));
}

void PrefixStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  inner_->wait(full(keys), timeout);
}

bool PrefixStore::delete_key(const std::string& key) {
  return inner_->delete_key(full(key));
}

std::int64_t PrefixStore::num_keys() {
  return inner_->num_keys();
}

}  // namespace dtrain::store
