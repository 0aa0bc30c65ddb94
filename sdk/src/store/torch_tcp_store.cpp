// The client side of PyTorch's TCPStore protocol (c10d's TCPStore and its
// libuv server), as its client sends it:
//
//   connect:      VALIDATE u32 magic, then PING u32 nonce -> u32 nonce
//   SET          key value                 (no answer)
//   COMPARE_SET  key expected desired      -> bytes
//   GET          key                       -> bytes (after a WAIT for the key)
//   ADD          key i64                   -> i64
//   CHECK        u64 count, keys           -> u8 READY(0) / NOT_READY(1)
//   WAIT         u64 count, keys           -> u8 STOP_WAITING(0) when all exist
//   CANCEL_WAIT                            -> u8 WAIT_CANCELED(1), after a
//                                             STOP_WAITING that crossed it
//   GETNUMKEYS                             -> i64
//   DELETE_KEY   key                       -> i64 keys deleted
//
// The query type is one byte; keys and byte strings are a u64 length and
// the bytes; numbers are in the host's byte order (little-endian on every
// machine dtrain runs on), as PyTorch writes them.
#include "dtrain/store/torch_tcp_store.h"

#include <mutex>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "dtrain/store/host_port.h"
#include "dtrain/store/socket.h"

namespace dtrain::store {

namespace {

enum class Query : std::uint8_t {
  kValidate = 0,
  kSet = 1,
  kCompareSet = 2,
  kGet = 3,
  kAdd = 4,
  kCheck = 5,
  kWait = 6,
  kNumKeys = 7,
  kDeleteKey = 8,
  kCancelWait = 12,
  kPing = 13,
};

constexpr std::uint32_t kValidationMagic = 0x3C85F7CE;
constexpr std::uint8_t kReady = 0;        // CHECK's answer
constexpr std::uint8_t kStopWaiting = 0;  // WAIT's answer
constexpr std::uint8_t kWaitCanceled = 1;
// Values larger than this are taken for a broken stream, not allocated.
constexpr std::uint64_t kMaxValueBytes = 1ull << 30;
// How long a call that does not wait may take to be answered, and how long
// the server may take to confirm a cancelled wait.
constexpr std::chrono::seconds kAnswerDeadline{30};

// PyTorch's client puts this in front of every key.
const std::string kKeyPrefix = "/";

// One request, built in memory and sent in one write.
class Message {
 public:
  explicit Message(Query query) { bytes_.push_back(static_cast<std::uint8_t>(query)); }
  template <typename T>
  Message& number(T value) {
    const auto* raw = reinterpret_cast<const std::uint8_t*>(&value);
    bytes_.insert(bytes_.end(), raw, raw + sizeof(T));
    return *this;
  }
  Message& blob(const std::uint8_t* data, std::size_t size) {
    number<std::uint64_t>(size);
    bytes_.insert(bytes_.end(), data, data + size);
    return *this;
  }
  Message& key(const std::string& key) {
    const std::string full = kKeyPrefix + key;
    return blob(reinterpret_cast<const std::uint8_t*>(full.data()), full.size());
  }
  Message& value(const Bytes& value) { return blob(value.data(), value.size()); }
  Message& keys(const std::vector<std::string>& keys) {
    number<std::uint64_t>(keys.size());
    for (const auto& k : keys) {
      key(k);
    }
    return *this;
  }
  const Bytes& bytes() const { return bytes_; }

 private:
  Bytes bytes_;
};

}  // namespace

struct TorchTcpStore::Connection {
  std::mutex mutex;
  net::Socket socket;
  std::string address;

  void send(const Message& message) {
    net::send_all(socket, message.bytes().data(), message.bytes().size(),
                  net::Clock::now() + kAnswerDeadline);
  }
  template <typename T>
  T read(net::Clock::time_point deadline) {
    T value{};
    net::recv_exact(socket, &value, sizeof(T), deadline);
    return value;
  }
  Bytes read_bytes() {
    const auto deadline = net::Clock::now() + kAnswerDeadline;
    const auto size = read<std::uint64_t>(deadline);
    if (size > kMaxValueBytes) {
      throw StoreError("malformed answer (a value of " + std::to_string(size) + " bytes)");
    }
    Bytes value(size);
    net::recv_exact(socket, value.data(), value.size(), deadline);
    return value;
  }

  // Sends WAIT for `keys`; true once the server says they all exist, false
  // when `timeout` passed first (the wait is then cancelled on the server).
  bool wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
    send(Message(Query::kWait).keys(keys));
    try {
      expect(read<std::uint8_t>(net::Clock::now() + timeout), kStopWaiting, "WAIT");
      return true;
    } catch (const StoreTimeoutError&) {
    }
    send(Message(Query::kCancelWait));
    const auto deadline = net::Clock::now() + kAnswerDeadline;
    std::uint8_t answer = read<std::uint8_t>(deadline);
    if (answer == kStopWaiting) {  // the keys came just before the cancel
      answer = read<std::uint8_t>(deadline);
    }
    expect(answer, kWaitCanceled, "CANCEL_WAIT");
    return false;
  }

  static void expect(std::uint8_t answer, std::uint8_t wanted, const char* query) {
    if (answer != wanted) {
      throw StoreError("malformed answer to " + std::string(query) + ": " + std::to_string(answer));
    }
  }

  // Runs `call` under the lock, naming the address in its errors.
  template <typename Call>
  auto locked(Call&& call) {
    std::lock_guard<std::mutex> lock(mutex);
    try {
      return call();
    } catch (const StoreTimeoutError& e) {
      throw StoreTimeoutError("store at " + address + " (PyTorch's TCPStore): " + e.what());
    } catch (const StoreError& e) {
      throw StoreError("store at " + address + " (PyTorch's TCPStore): " + e.what());
    }
  }
};

TorchTcpStore::TorchTcpStore(const std::string& host, std::uint16_t port,
                             std::chrono::milliseconds timeout)
    : Store(timeout), connection_(std::make_unique<Connection>()) {
  DTRAIN_CHECK(timeout.count() > 0, "TorchTcpStore: timeout must be positive, got ",
               timeout.count(), " ms");
  DTRAIN_CHECK(port != 0, "TorchTcpStore: the server's port is needed, got 0");
  connection_->address = net::host_port(host, port);
  connection_->socket = net::connect_tcp(host, port, net::Clock::now() + timeout);
  // The server checks the magic number, then a ping proves it is one.
  const std::uint32_t nonce = std::random_device{}();
  connection_->locked([&] {
    connection_->send(Message(Query::kValidate).number(kValidationMagic));
    connection_->send(Message(Query::kPing).number(nonce));
    const auto echoed = connection_->read<std::uint32_t>(net::Clock::now() + timeout);
    if (echoed != nonce) {
      throw StoreError("the server is not PyTorch's TCPStore (its answer to a ping was wrong)");
    }
    return 0;
  });
  spdlog::debug("store: connected to PyTorch's TCPStore at {}", connection_->address);
}

TorchTcpStore::~TorchTcpStore() = default;

void TorchTcpStore::set(const std::string& key, const Bytes& value) {
  connection_->locked([&] {
    connection_->send(Message(Query::kSet).key(key).value(value));
    return 0;
  });
}

Bytes TorchTcpStore::get(const std::string& key) {
  return connection_->locked([&] {
    if (!connection_->wait({key}, timeout())) {
      throw StoreTimeoutError("key '" + key + "' did not appear within " +
                              std::to_string(timeout().count()) + " ms");
    }
    connection_->send(Message(Query::kGet).key(key));
    return connection_->read_bytes();
  });
}

std::int64_t TorchTcpStore::add(const std::string& key, std::int64_t delta) {
  return connection_->locked([&] {
    connection_->send(Message(Query::kAdd).key(key).number(delta));
    return connection_->read<std::int64_t>(net::Clock::now() + kAnswerDeadline);
  });
}

Bytes TorchTcpStore::compare_set(const std::string& key, const Bytes& expected,
                                 const Bytes& desired) {
  return connection_->locked([&] {
    connection_->send(Message(Query::kCompareSet).key(key).value(expected).value(desired));
    return connection_->read_bytes();
  });
}

bool TorchTcpStore::check(const std::vector<std::string>& keys) {
  return connection_->locked([&] {
    connection_->send(Message(Query::kCheck).keys(keys));
    return connection_->read<std::uint8_t>(net::Clock::now() + kAnswerDeadline) == kReady;
  });
}

void TorchTcpStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  connection_->locked([&] {
    if (!connection_->wait(keys, timeout)) {
      throw StoreTimeoutError("waited " + std::to_string(timeout.count()) + " ms for keys [" +
                              fmt::format("{}", fmt::join(keys, ", ")) + "]");
    }
    return 0;
  });
}

bool TorchTcpStore::delete_key(const std::string& key) {
  return connection_->locked([&] {
    connection_->send(Message(Query::kDeleteKey).key(key));
    return connection_->read<std::int64_t>(net::Clock::now() + kAnswerDeadline) == 1;
  });
}

std::int64_t TorchTcpStore::num_keys() {
  return connection_->locked([&] {
    connection_->send(Message(Query::kNumKeys));
    return connection_->read<std::int64_t>(net::Clock::now() + kAnswerDeadline);
  });
}

}  // namespace dtrain::store
