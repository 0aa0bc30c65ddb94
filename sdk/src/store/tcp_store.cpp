// TcpStore's client side: one connection, one request in flight at a time.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "dtrain/store/host_port.h"
#include "dtrain/store/socket.h"
#include "dtrain/store/tcp_store.h"
#include "store_protocol.h"

namespace dtrain::store {

namespace {

using protocol::Op;
using protocol::Request;
using protocol::Response;
using protocol::Status;

// How long past a waiting request's own timeout the client waits for the
// server's answer before deciding the server is gone.
constexpr std::chrono::milliseconds kAnswerGrace{std::chrono::seconds(10)};

Request make(Op op, std::vector<std::string> keys = {}) {
  Request request;
  request.op = op;
  request.keys = std::move(keys);
  return request;
}

}  // namespace

struct TcpStore::Connection {
  std::mutex mutex;
  net::Socket socket;
  std::string address;

  // Sends one request and reads its answer; `wait_ms` is how long the server may take.
  Response call(const Request& request, std::chrono::milliseconds wait_ms) {
    std::lock_guard<std::mutex> lock(mutex);
    const auto deadline = net::Clock::now() + wait_ms + kAnswerGrace;
    try {
      const Bytes frame = protocol::encode_request(request);
      net::send_all(socket, frame.data(), frame.size(), deadline);
      std::uint8_t header[4];
      net::recv_exact(socket, header, 4, deadline);
      const std::uint32_t length = header[0] | (header[1] << 8) | (header[2] << 16) |
                                   (static_cast<std::uint32_t>(header[3]) << 24);
      if (length > protocol::kMaxFrameBytes) {
        throw StoreError("malformed answer (length " + std::to_string(length) + ")");
      }
      Bytes body(length);
      net::recv_exact(socket, body.data(), body.size(), deadline);
      auto response = protocol::parse_response_body(body);
      if (!response) {
        throw StoreError("malformed answer");
      }
      return *response;
    } catch (const StoreTimeoutError& e) {
      throw StoreTimeoutError("store at " + address + " did not answer: " + e.what());
    } catch (const StoreError& e) {
      throw StoreError("store at " + address + ": " + e.what());
    }
  }
};

TcpStore::TcpStore(const TcpStoreOptions& options)
    : Store(options.timeout_), host_(options.host_), port_(options.port_) {
  DTRAIN_CHECK(options.timeout_.count() > 0, "TcpStoreOptions: timeout must be positive, got ",
               options.timeout_.count(), " ms");
  DTRAIN_CHECK(options.is_server_ || options.port_ != 0,
               "TcpStoreOptions: a client needs the server's port, got 0");
  if (options.is_server_) {
    server_ = std::make_unique<TcpStoreServer>(options.port_);
    port_ = server_->port();
  }
  connection_ = std::make_unique<Connection>();
  connection_->address = net::host_port(host_, port_);
  connection_->socket = net::connect_tcp(host_, port_, net::Clock::now() + options.timeout_);
  spdlog::debug("store: connected to {}{}", connection_->address, server_ ? " (own server)" : "");
}

TcpStore::~TcpStore() {
  connection_.reset();  // close the client before the server stops
  server_.reset();
}

void TcpStore::set(const std::string& key, const Bytes& value) {
  Request request = make(Op::kSet, {key});
  request.value = value;
  connection_->call(request, std::chrono::milliseconds(0));
}

Bytes TcpStore::get(const std::string& key) {
  Request request = make(Op::kGet, {key});
  request.number = timeout().count();
  const Response response = connection_->call(request, timeout());
  if (response.status == Status::kTimeout) {
    throw StoreTimeoutError("store at " + connection_->address + ": key '" + key +
                            "' did not appear within " + std::to_string(timeout().count()) + " ms");
  }
  return response.value;
}

std::int64_t TcpStore::add(const std::string& key, std::int64_t delta) {
  Request request = make(Op::kAdd, {key});
  request.number = delta;
  const Response response = connection_->call(request, std::chrono::milliseconds(0));
  if (response.status == Status::kError) {
    throw StoreError("store at " + connection_->address + ": add to key '" + key +
                     "' failed: " + std::string(response.value.begin(), response.value.end()));
  }
  return response.number;
}

Bytes TcpStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  Request request = make(Op::kCompareSet, {key});
  request.expected = expected;
  request.value = desired;
  return connection_->call(request, std::chrono::milliseconds(0)).value;
}

bool TcpStore::check(const std::vector<std::string>& keys) {
  return connection_->call(make(Op::kCheck, keys), std::chrono::milliseconds(0)).number != 0;
}

void TcpStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  Request request = make(Op::kWait, keys);
  request.number = timeout.count();
  const Response response = connection_->call(request, timeout);
  if (response.status == Status::kTimeout) {
    throw StoreTimeoutError(
        "store at " + connection_->address + ": waited " + std::to_string(timeout.count()) +
        " ms for keys [" + fmt::format("{}", fmt::join(keys, ", ")) +
        "]; still missing: " + std::string(response.value.begin(), response.value.end()));
  }
}

bool TcpStore::delete_key(const std::string& key) {
  return connection_->call(make(Op::kDelete, {key}), std::chrono::milliseconds(0)).number != 0;
}

std::int64_t TcpStore::num_keys() {
  return connection_->call(make(Op::kNumKeys), std::chrono::milliseconds(0)).number;
}

}  // namespace dtrain::store
