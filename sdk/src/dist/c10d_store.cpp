#include "c10d_store.h"

#include <string>
#include <utility>
#include <vector>

namespace dtrain::dist::detail {

namespace {

class C10dStore : public c10d::Store {
 public:
  C10dStore(std::shared_ptr<store::Store> store, std::chrono::milliseconds timeout)
      : c10d::Store(timeout), store_(std::move(store)) {}

  c10::intrusive_ptr<c10d::Store> clone() override {
    return c10::make_intrusive<C10dStore>(store_, timeout_);
  }
  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    call([&] { store_->set(key, value); });
  }
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override {
    return call([&] { return store_->compare_set(key, expected, desired); });
  }
  std::vector<uint8_t> get(const std::string& key) override {
    return call([&] {
      store_->wait({key}, timeout_);
      return store_->get(key);
    });
  }
  int64_t add(const std::string& key, int64_t value) override {
    return call([&] { return store_->add(key, value); });
  }
  bool deleteKey(const std::string& key) override {
    return call([&] { return store_->delete_key(key); });
  }
  bool check(const std::vector<std::string>& keys) override {
    return call([&] { return store_->check(keys); });
  }
  int64_t getNumKeys() override {
    return call([&] { return store_->num_keys(); });
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    call([&] { store_->wait(keys, timeout); });
  }

 private:
  // dtrain's store errors as c10d's, whose process groups catch those.
  template <typename Body>
  static auto call(Body&& body) -> decltype(body()) {
    try {
      return body();
    } catch (const store::StoreTimeoutError& e) {
      C10_THROW_ERROR(DistStoreError, e.what());
    } catch (const store::StoreError& e) {
      C10_THROW_ERROR(DistStoreError, e.what());
    }
  }

  std::shared_ptr<store::Store> store_;
};

}  // namespace

c10::intrusive_ptr<c10d::Store> as_c10d_store(std::shared_ptr<store::Store> store,
                                              std::chrono::milliseconds timeout) {
  return c10::make_intrusive<C10dStore>(std::move(store), timeout);
}

}  // namespace dtrain::dist::detail
