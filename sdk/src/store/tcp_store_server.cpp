// The TCP store's server: one thread, one poll() loop over the listening
// socket, a wake-up pipe and every client. Requests that cannot be answered
// yet (GET of a missing key, WAIT) park as waiters until the keys appear or
// their deadline passes. Note [Store server isolation]: anything wrong with
// one client -- a malformed frame, an oversized frame, a reset -- closes
// that client and drops its waiters; the loop itself never throws.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <list>
#include <map>
#include <thread>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "dtrain/store/socket.h"
#include "dtrain/store/tcp_store.h"
#include "store_protocol.h"

namespace dtrain::store {

namespace {

using protocol::Op;
using protocol::ParseState;
using protocol::Request;
using protocol::Response;
using protocol::Status;
using Clock = net::Clock;

struct Client {
  net::Socket socket;
  Bytes inbox;
  Bytes outbox;
};

struct Waiter {
  int client_fd;
  Request request;
  Clock::time_point deadline;
};

// ADD keeps integers as decimal text, as torch's stores do, so that keys
// written by add() read back with get() as numbers.
std::int64_t parse_counter(const Bytes& value) {
  std::int64_t number = 0;
  const auto* begin = reinterpret_cast<const char*>(value.data());
  const auto [end, ec] = std::from_chars(begin, begin + value.size(), number);
  if (ec != std::errc() || end != begin + value.size()) {
    throw StoreError("value is not an integer, cannot add to it");
  }
  return number;
}

}  // namespace

struct TcpStoreServer::State {
  net::Socket listener;
  int wake_read = -1;
  int wake_write = -1;
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> rejected{0};
  std::thread thread;

  std::unordered_map<int, Client> clients;
  std::map<std::string, Bytes> data;
  std::list<Waiter> waiters;

  void run();
  void accept_clients();
  void read_client(Client& client);
  void write_client(Client& client);
  void close_client(int fd);
  void handle(int fd, const Request& request);
  void reply(int fd, const Response& response);
  bool ready(const Request& request) const;
  Response answer_ready(const Request& request) const;
  void wake_waiters();
  void expire_waiters();
  int poll_timeout_ms() const;
};

TcpStoreServer::TcpStoreServer(std::uint16_t port) : state_(std::make_unique<State>()) {
  state_->listener = net::listen_tcp("", port);
  net::set_nonblocking(state_->listener.fd());
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw StoreError("store server: cannot create its wake-up pipe");
  }
  state_->wake_read = pipe_fds[0];
  state_->wake_write = pipe_fds[1];
  state_->thread = std::thread([state = state_.get()] { state->run(); });
}

TcpStoreServer::~TcpStoreServer() {
  state_->stop = true;
  const char byte = 1;
  [[maybe_unused]] const auto written = ::write(state_->wake_write, &byte, 1);
  state_->thread.join();
  ::close(state_->wake_read);
  ::close(state_->wake_write);
}

std::uint16_t TcpStoreServer::port() const {
  return net::local_port(state_->listener);
}

std::int64_t TcpStoreServer::rejected_clients() const {
  return state_->rejected.load();
}

void TcpStoreServer::State::run() {
  std::vector<pollfd> fds;
  while (!stop) {
    fds.clear();
    fds.push_back({wake_read, POLLIN, 0});
    fds.push_back({listener.fd(), POLLIN, 0});
    for (const auto& [fd, client] : clients) {
      fds.push_back({fd, static_cast<short>(POLLIN | (client.outbox.empty() ? 0 : POLLOUT)), 0});
    }
    const int ready_count = ::poll(fds.data(), fds.size(), poll_timeout_ms());
    if (ready_count < 0 && errno != EINTR) {
      spdlog::error("store server: poll failed: {}", std::strerror(errno));
      return;
    }
    if (fds[1].revents & POLLIN) {
      accept_clients();
    }
    for (std::size_t i = 2; i < fds.size(); ++i) {
      const int fd = fds[i].fd;
      auto it = clients.find(fd);
      if (it == clients.end()) {
        continue;
      }
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        read_client(it->second);
      }
      it = clients.find(fd);
      if (it != clients.end() && (fds[i].revents & POLLOUT)) {
        write_client(it->second);
      }
    }
    expire_waiters();
  }
}

void TcpStoreServer::State::accept_clients() {
  while (true) {
    const int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      return;  // EAGAIN: no more pending; other errors: try again next round
    }
    clients.emplace(fd, Client{net::Socket(fd), {}, {}});
  }
}

void TcpStoreServer::State::read_client(Client& client) {
  const int fd = client.socket.fd();
  std::uint8_t buffer[64 * 1024];
  while (true) {
    const ssize_t got = ::recv(fd, buffer, sizeof(buffer), 0);
    if (got > 0) {
      client.inbox.insert(client.inbox.end(), buffer, buffer + got);
      continue;
    }
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      break;
    }
    close_client(fd);  // orderly close or reset, possibly mid-request
    return;
  }
  std::size_t offset = 0;
  while (true) {
    const auto parsed =
        protocol::parse_request(std::span<const std::uint8_t>(client.inbox).subspan(offset));
    if (parsed.state == ParseState::kNeedMore) {
      break;
    }
    if (parsed.state == ParseState::kMalformed) {
      spdlog::warn("store server: cutting off a client that sent a malformed message ({})",
                   parsed.problem);
      ++rejected;
      close_client(fd);
      return;
    }
    offset += parsed.consumed;
    handle(fd, parsed.request);
    if (clients.find(fd) == clients.end()) {
      return;
    }
  }
  client.inbox.erase(client.inbox.begin(),
                     client.inbox.begin() + static_cast<std::ptrdiff_t>(offset));
}

void TcpStoreServer::State::write_client(Client& client) {
  while (!client.outbox.empty()) {
    const ssize_t sent =
        ::send(client.socket.fd(), client.outbox.data(), client.outbox.size(), MSG_NOSIGNAL);
    if (sent > 0) {
      client.outbox.erase(client.outbox.begin(), client.outbox.begin() + sent);
    } else if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      return;
    } else {
      close_client(client.socket.fd());
      return;
    }
  }
}

void TcpStoreServer::State::close_client(int fd) {
  waiters.remove_if([fd](const Waiter& w) { return w.client_fd == fd; });
  clients.erase(fd);
}

void TcpStoreServer::State::reply(int fd, const Response& response) {
  auto it = clients.find(fd);
  if (it == clients.end()) {
    return;
  }
  const Bytes frame = protocol::encode_response(response);
  it->second.outbox.insert(it->second.outbox.end(), frame.begin(), frame.end());
  write_client(it->second);
}

bool TcpStoreServer::State::ready(const Request& request) const {
  for (const auto& key : request.keys) {
    if (data.find(key) == data.end()) {
      return false;
    }
  }
  return true;
}

Response TcpStoreServer::State::answer_ready(const Request& request) const {
  Response response;
  if (request.op == Op::kGet) {
    response.value = data.at(request.keys[0]);
  }
  return response;
}

void TcpStoreServer::State::handle(int fd, const Request& request) {
  Response response;
  const std::string* key = request.keys.empty() ? nullptr : &request.keys[0];
  try {
    switch (request.op) {
      case Op::kSet:
        data[*key] = request.value;
        break;
      case Op::kGet:
      case Op::kWait:
        if (!ready(request)) {
          waiters.push_back({fd, request,
                             Clock::now() + std::chrono::milliseconds(
                                                std::max<std::int64_t>(request.number, 0))});
          return;  // answered when the keys appear or the deadline passes
        }
        response = answer_ready(request);
        break;
      case Op::kAdd: {
        auto it = data.find(*key);
        const std::int64_t sum =
            (it == data.end() ? 0 : parse_counter(it->second)) + request.number;
        const std::string text = std::to_string(sum);
        data[*key] = Bytes(text.begin(), text.end());
        response.number = sum;
        break;
      }
      case Op::kCompareSet: {
        auto it = data.find(*key);
        if ((it == data.end() && request.expected.empty()) ||
            (it != data.end() && it->second == request.expected)) {
          data[*key] = request.value;
          response.value = request.value;
        } else if (it != data.end()) {
          response.value = it->second;
        } else {
          response.value = request.expected;
        }
        break;
      }
      case Op::kCheck:
        response.number = ready(request) ? 1 : 0;
        break;
      case Op::kDelete:
        response.number = data.erase(*key) > 0 ? 1 : 0;
        break;
      case Op::kNumKeys:
        response.number = static_cast<std::int64_t>(data.size());
        break;
      case Op::kPing:
        break;
    }
  } catch (const std::exception& e) {
    response.status = Status::kError;
    const std::string text = e.what();
    response.value = Bytes(text.begin(), text.end());
  }
  reply(fd, response);
  if (request.op == Op::kSet || request.op == Op::kAdd || request.op == Op::kCompareSet) {
    wake_waiters();
  }
}

void TcpStoreServer::State::wake_waiters() {
  for (auto it = waiters.begin(); it != waiters.end();) {
    if (ready(it->request)) {
      const int fd = it->client_fd;
      const Response response = answer_ready(it->request);
      it = waiters.erase(it);
      reply(fd, response);
    } else {
      ++it;
    }
  }
}

void TcpStoreServer::State::expire_waiters() {
  const auto now = Clock::now();
  for (auto it = waiters.begin(); it != waiters.end();) {
    if (it->deadline <= now) {
      std::string missing;
      for (const auto& key : it->request.keys) {
        if (data.find(key) == data.end()) {
          missing += (missing.empty() ? "" : ", ") + key;
        }
      }
      Response response;
      response.status = Status::kTimeout;
      response.value = Bytes(missing.begin(), missing.end());
      const int fd = it->client_fd;
      it = waiters.erase(it);
      reply(fd, response);
    } else {
      ++it;
    }
  }
}

int TcpStoreServer::State::poll_timeout_ms() const {
  if (waiters.empty()) {
    return -1;
  }
  auto earliest = waiters.front().deadline;
  for (const auto& w : waiters) {
    earliest = std::min(earliest, w.deadline);
  }
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(earliest - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(ms + 1, 0, 1 << 30));
}

}  // namespace dtrain::store
