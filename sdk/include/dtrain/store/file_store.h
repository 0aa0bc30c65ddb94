// FileStore: a Store kept in one file, for `file:///path` initialisation on
// a file system every process can see (a local disk for one machine, NFS or
// Lustre for several).
//
// Every call takes an exclusive lock on the file (flock), reads the log of
// records, and appends its change, so concurrent writers in different
// processes never interleave. A record cut short by a crash is ignored and
// overwritten by the next writer. get/wait poll the file until the keys
// appear or the timeout passes.
//
// The file outlives a job unless the store knows how many processes use
// it: with num_users, each FileStore counts itself out when destroyed and
// the last one deletes the file (as PyTorch's FileStore does), so the next
// job on the same file:// URL starts from an empty store instead of reading
// the previous job's records.
#pragma once

#include <cstdint>
#include <string>

#include "dtrain/store/store.h"

namespace dtrain::store {

class FileStore : public Store {
 public:
  // Creates the file if missing. Throws StoreError naming the path when it
  // cannot be opened or created. num_users > 0: the processes that share
  // the file, each with one FileStore; the last destroyed deletes it.
  explicit FileStore(std::string path, std::chrono::milliseconds timeout = kDefaultTimeout,
                     std::int64_t num_users = 0);
  ~FileStore() override;
  // Sets num_users later: for a process that should count itself out only
  // once it has really joined (init_process_group, after the membership
  // check), so a failed attempt that it retries is not counted.
  void delete_when_all_done(std::int64_t num_users);

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
  std::int64_t num_users_ = 0;
};

}  // namespace dtrain::store
