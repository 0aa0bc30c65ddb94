// FileStore: an append-only log of records under an exclusive flock.
//
//   record = u32 key length | key | u32 value length | value
//   value length 0xFFFFFFFF marks a deletion (no value bytes follow)
//
// Replaying the log from the start gives the current map. A trailing
// partial record (a writer died mid-append) is cut off before appending.
#include "dtrain/store/file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <thread>

namespace dtrain::store {

namespace {

constexpr std::uint32_t kDeleted = 0xFFFFFFFF;
constexpr auto kPollInterval = std::chrono::milliseconds(10);

// The open, locked file for the duration of one store call.
class LockedLog {
 public:
  explicit LockedLog(const std::string& path, bool create = true) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
    if (fd_ < 0) {
      throw StoreError("file store '" + path + "': cannot open: " + std::strerror(errno));
    }
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        const int error = errno;
        ::close(fd_);
        throw StoreError("file store '" + path + "': cannot lock: " + std::strerror(error));
      }
    }
    replay();
  }
  ~LockedLog() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  LockedLog(const LockedLog&) = delete;
  LockedLog& operator=(const LockedLog&) = delete;

  const std::map<std::string, Bytes>& data() const { return data_; }

  void put(const std::string& key, const Bytes& value) {
    append(key, &value);
    data_[key] = value;
  }
  void erase(const std::string& key) {
    append(key, nullptr);
    data_.erase(key);
  }

 private:
  void replay() {
    Bytes log;
    std::uint8_t buffer[64 * 1024];
    ssize_t got = 0;
    ::lseek(fd_, 0, SEEK_SET);
    while ((got = ::read(fd_, buffer, sizeof(buffer))) > 0) {
      log.insert(log.end(), buffer, buffer + got);
    }
    if (got < 0) {
      throw StoreError("file store '" + path_ + "': cannot read: " + std::strerror(errno));
    }
    std::size_t pos = 0;
    auto read_u32 = [&](std::uint32_t& v) {
      if (log.size() - pos < 4) {
        return false;
      }
      std::memcpy(&v, log.data() + pos, 4);
      pos += 4;
      return true;
    };
    while (true) {
      const std::size_t record_start = pos;
      std::uint32_t key_len = 0;
      std::uint32_t value_len = 0;
      if (!read_u32(key_len) || log.size() - pos < key_len) {
        valid_end_ = record_start;
        break;
      }
      std::string key(reinterpret_cast<const char*>(log.data() + pos), key_len);
      pos += key_len;
      if (!read_u32(value_len)) {
        valid_end_ = record_start;
        break;
      }
      if (value_len == kDeleted) {
        data_.erase(key);
        continue;
      }
      if (log.size() - pos < value_len) {
        valid_end_ = record_start;
        break;
      }
      data_[key] = Bytes(log.begin() + static_cast<std::ptrdiff_t>(pos),
                         log.begin() + static_cast<std::ptrdiff_t>(pos + value_len));
      pos += value_len;
    }
    if (valid_end_ < log.size() && ::ftruncate(fd_, static_cast<off_t>(valid_end_)) != 0) {
      throw StoreError("file store '" + path_ +
                       "': cannot drop a partial record: " + std::strerror(errno));
    }
  }

  void append(const std::string& key, const Bytes* value) {
    Bytes record;
    auto put_u32 = [&](std::uint32_t v) {
      const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
      record.insert(record.end(), p, p + 4);
    };
    put_u32(static_cast<std::uint32_t>(key.size()));
    record.insert(record.end(), key.begin(), key.end());
    put_u32(value ? static_cast<std::uint32_t>(value->size()) : kDeleted);
    if (value) {
      record.insert(record.end(), value->begin(), value->end());
    }
    ::lseek(fd_, static_cast<off_t>(valid_end_), SEEK_SET);
    std::size_t written = 0;
    while (written < record.size()) {
      const ssize_t n = ::write(fd_, record.data() + written, record.size() - written);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        throw StoreError("file store '" + path_ + "': cannot write: " + std::strerror(errno));
      }
      written += static_cast<std::size_t>(n);
    }
    valid_end_ += record.size();
  }

  std::string path_;
  int fd_ = -1;
  std::size_t valid_end_ = 0;
  std::map<std::string, Bytes> data_;
};

std::int64_t parse_counter(const std::string& path, const std::string& key, const Bytes& value) {
  std::int64_t number = 0;
  const auto* begin = reinterpret_cast<const char*>(value.data());
  const auto [end, ec] = std::from_chars(begin, begin + value.size(), number);
  if (ec != std::errc() || end != begin + value.size()) {
    throw StoreError("file store '" + path + "': key '" + key + "' does not hold an integer");
  }
  return number;
}

}  // namespace

// Counts the users that are done with the file; outside every key a job
// uses (init_process_group prefixes those).
constexpr const char* kDoneKey = "file_store/users_done";

FileStore::FileStore(std::string path, std::chrono::milliseconds timeout, std::int64_t num_users)
    : Store(timeout), path_(std::move(path)) {
  DTRAIN_CHECK(!path_.empty(), "FileStore: the path is empty");
  LockedLog log(path_);  // creates the file, or says why it cannot
  delete_when_all_done(num_users);
}

void FileStore::delete_when_all_done(std::int64_t num_users) {
  DTRAIN_CHECK(num_users >= 0, "FileStore: num_users must be >= 0, got ", num_users);
  num_users_ = num_users;
}

FileStore::~FileStore() {
  if (num_users_ == 0) {
    return;
  }
  try {
    LockedLog log(path_, /*create=*/false);  // a file already deleted stays deleted
    const auto it = log.data().find(kDoneKey);
    const std::int64_t done =
        1 + (it == log.data().end() ? 0 : parse_counter(path_, kDoneKey, it->second));
    if (done >= num_users_) {
      ::unlink(path_.c_str());  // under the lock: nobody reads it half-deleted
    } else {
      const std::string text = std::to_string(done);
      log.put(kDoneKey, Bytes(text.begin(), text.end()));
    }
  } catch (const std::exception&) {
    // A destructor must not throw; the file is left for the user to delete.
  }
}

void FileStore::set(const std::string& key, const Bytes& value) {
  LockedLog(path_).put(key, value);
}

Bytes FileStore::get(const std::string& key) {
  wait({key}, timeout());
  return LockedLog(path_).data().at(key);
}

std::int64_t FileStore::add(const std::string& key, std::int64_t delta) {
  LockedLog log(path_);
  const auto it = log.data().find(key);
  const std::int64_t sum =
      (it == log.data().end() ? 0 : parse_counter(path_, key, it->second)) + delta;
  const std::string text = std::to_string(sum);
  log.put(key, Bytes(text.begin(), text.end()));
  return sum;
}

Bytes FileStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  LockedLog log(path_);
  const auto it = log.data().find(key);
  if ((it == log.data().end() && expected.empty()) ||
      (it != log.data().end() && it->second == expected)) {
    log.put(key, desired);
    return desired;
  }
  return it == log.data().end() ? expected : it->second;
}

bool FileStore::check(const std::vector<std::string>& keys) {
  LockedLog log(path_);
  for (const auto& key : keys) {
    if (log.data().find(key) == log.data().end()) {
      return false;
    }
  }
  return true;
}

void FileStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!check(keys)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string requested;
      std::string missing;
      LockedLog log(path_);
      for (const auto& key : keys) {
        requested += (requested.empty() ? "" : ", ") + key;
        if (log.data().find(key) == log.data().end()) {
          missing += (missing.empty() ? "" : ", ") + key;
        }
      }
      throw StoreTimeoutError("file store '" + path_ + "': waited " +
                              std::to_string(timeout.count()) + " ms for keys [" + requested +
                              "]; still missing: " + missing);
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

bool FileStore::delete_key(const std::string& key) {
  LockedLog log(path_);
  if (log.data().find(key) == log.data().end()) {
    return false;
  }
  log.erase(key);
  return true;
}

std::int64_t FileStore::num_keys() {
  return static_cast<std::int64_t>(LockedLog(path_).data().size());
}

}  // namespace dtrain::store
