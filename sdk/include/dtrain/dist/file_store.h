// FileStore: a Store kept in one file, for `file:///path` initialisation on
// a file system every process can see (a local disk for one machine, NFS or
// Lustre for several).
//
// Every call takes an exclusive lock on the file (flock), reads the log of
// records, and appends its change, so concurrent writers in different
// processes never interleave. A record cut short by a crash is ignored and
// overwritten by the next writer. get/wait poll the file until the keys
// appear or the timeout passes.
#pragma once

#include <string>

#include "dtrain/dist/store.h"

namespace dtrain::dist {

class FileStore : public Store {
 public:
  // Creates the file if missing. Throws StoreError naming the path when it
  // cannot be opened or created.
  explicit FileStore(std::string path, std::chrono::milliseconds timeout = kDefaultTimeout);

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

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace dtrain::dist
