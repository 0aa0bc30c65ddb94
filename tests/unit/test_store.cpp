// dtrain::dist stores: the same contract for TcpStore, FileStore and
// PrefixStore, then what only the TCP server must survive.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include "dtrain/store/file_store.h"
#include "dtrain/store/prefix_store.h"
#include "dtrain/store/tcp_store.h"
#include "test_support.h"

namespace {

using namespace std::chrono_literals;
using dtrain::store::Bytes;
using dtrain::store::FileStore;
using dtrain::store::PrefixStore;
using dtrain::store::Store;
using dtrain::store::StoreError;
using dtrain::store::StoreTimeoutError;
using dtrain::store::TcpStore;
using dtrain::store::TcpStoreOptions;
using dtrain::store::TcpStoreServer;
using Clock = std::chrono::steady_clock;

Bytes bytes(const std::string& text) {
  return Bytes(text.begin(), text.end());
}

// Makes a fresh store, and more clients of the same store, for one test.
class StoreFactory {
 public:
  virtual ~StoreFactory() = default;
  virtual std::unique_ptr<Store> client() = 0;
};

class TcpFactory : public StoreFactory {
 public:
  TcpFactory() : server_(0) {}
  std::unique_ptr<Store> client() override {
    return std::make_unique<TcpStore>(TcpStoreOptions().port(server_.port()).timeout(5s));
  }

 private:
  TcpStoreServer server_;
};

class FileFactory : public StoreFactory {
 public:
  std::unique_ptr<Store> client() override {
    return std::make_unique<FileStore>(dir_.file("store"), 5s);
  }

 private:
  dtrain::testing::TempDir dir_;
};

class PrefixFactory : public StoreFactory {
 public:
  std::unique_ptr<Store> client() override {
    auto inner = std::shared_ptr<Store>(inner_.client());
    // Noise under another prefix must never be visible through ours.
    PrefixStore(std::string("other"), inner).set("k", std::string("noise"));
    return std::make_unique<PrefixStore>("job", inner);
  }

 private:
  TcpFactory inner_;
};

using FactoryMaker = std::function<std::unique_ptr<StoreFactory>()>;

class StoreContract : public ::testing::TestWithParam<std::pair<const char*, FactoryMaker>> {
 protected:
  void SetUp() override { factory_ = GetParam().second(); }
  std::unique_ptr<StoreFactory> factory_;
};

TEST_P(StoreContract, SetThenGetFromAnotherClient) {
  auto a = factory_->client();
  auto b = factory_->client();
  a->set("key", bytes("value"));
  EXPECT_EQ(b->get("key"), bytes("value"));
  a->set("key", Bytes{0, 255, 7});  // binary values, overwritten
  EXPECT_EQ(b->get("key"), (Bytes{0, 255, 7}));
  a->set("empty", Bytes{});
  EXPECT_EQ(b->get("empty"), Bytes{});
}

TEST_P(StoreContract, GetWaitsForALaterSet) {
  auto reader = factory_->client();
  // The clock starts before the writer's sleep does, so the set comes at
  // least 150 ms after it however the threads are scheduled.
  const auto start = Clock::now();
  std::thread writer([&, client = factory_->client()]() mutable {
    std::this_thread::sleep_for(150ms);
    client->set("late", std::string("here"));
  });
  EXPECT_EQ(reader->get_string("late"), "here");
  EXPECT_GE(Clock::now() - start, 100ms);
  writer.join();
}

TEST_P(StoreContract, AddIsAtomicAcrossClients) {
  constexpr int kThreads = 4;
  constexpr int kAdds = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([client = factory_->client()]() mutable {
      for (int i = 0; i < kAdds; ++i) {
        client->add("counter", 1);
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  auto store = factory_->client();
  EXPECT_EQ(store->add("counter", 0), kThreads * kAdds);
  EXPECT_EQ(store->get_string("counter"), std::to_string(kThreads * kAdds));
  EXPECT_EQ(store->add("counter", -5), kThreads * kAdds - 5);
}

TEST_P(StoreContract, AddToANonNumberIsAnError) {
  auto store = factory_->client();
  store->set("text", std::string("abc"));
  EXPECT_THROW(store->add("text", 1), StoreError);
  EXPECT_EQ(store->add("fresh", 3), 3);  // the store still works
}

TEST_P(StoreContract, CompareSet) {
  auto store = factory_->client();
  // Absent key with empty expectation: set.
  EXPECT_EQ(store->compare_set("k", {}, bytes("first")), bytes("first"));
  // Wrong expectation: unchanged, returns the current value.
  EXPECT_EQ(store->compare_set("k", bytes("nope"), bytes("second")), bytes("first"));
  // Right expectation: swapped.
  EXPECT_EQ(store->compare_set("k", bytes("first"), bytes("second")), bytes("second"));
  EXPECT_EQ(store->get("k"), bytes("second"));
  // Absent key with a non-empty expectation: nothing is set.
  EXPECT_EQ(store->compare_set("absent", bytes("x"), bytes("y")), bytes("x"));
  EXPECT_FALSE(store->check({"absent"}));
}

TEST_P(StoreContract, CheckDeleteAndCount) {
  auto store = factory_->client();
  const auto base = store->num_keys();
  EXPECT_FALSE(store->check({"a"}));
  store->set("a", std::string("1"));
  store->set("b", std::string("2"));
  EXPECT_TRUE(store->check({"a", "b"}));
  EXPECT_FALSE(store->check({"a", "c"}));
  EXPECT_EQ(store->num_keys(), base + 2);
  EXPECT_TRUE(store->delete_key("a"));
  EXPECT_FALSE(store->delete_key("a"));
  EXPECT_FALSE(store->check({"a"}));
  EXPECT_EQ(store->num_keys(), base + 1);
}

TEST_P(StoreContract, WaitTimesOutNamingMissingKeys) {
  auto store = factory_->client();
  store->set("present", std::string("1"));
  const auto start = Clock::now();
  try {
    store->wait({"present", "missing"}, 200ms);
    FAIL() << "wait returned without the key";
  } catch (const StoreTimeoutError& e) {
    const std::string message = e.what();
    const auto tail = message.find("still missing: ");
    ASSERT_NE(tail, std::string::npos) << message;
    // Only the missing key is listed there (a PrefixStore shows its full name).
    EXPECT_TRUE(message.ends_with("missing")) << message;
    EXPECT_EQ(message.find("present", tail), std::string::npos) << message;
  }
  const auto waited = Clock::now() - start;
  EXPECT_GE(waited, 190ms);
  EXPECT_LT(waited, 3s);
}

TEST_P(StoreContract, GetTimesOut) {
  auto store = factory_->client();
  store->set_timeout(150ms);
  EXPECT_THROW(store->get("never"), StoreTimeoutError);
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreContract,
                         ::testing::Values(
                             std::pair<const char*, FactoryMaker>{
                                 "Tcp", [] { return std::make_unique<TcpFactory>(); }},
                             std::pair<const char*, FactoryMaker>{
                                 "File", [] { return std::make_unique<FileFactory>(); }},
                             std::pair<const char*, FactoryMaker>{
                                 "Prefix", [] { return std::make_unique<PrefixFactory>(); }}),
                         [](const auto& info) { return std::string(info.param.first); });

// A raw connection to the server, for sending what a real client never would.
class RawClient {
 public:
  explicit RawClient(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      throw std::runtime_error("RawClient: connect failed");
    }
  }
  ~RawClient() { ::close(fd_); }
  void send(const Bytes& data) {
    ASSERT_EQ(::send(fd_, data.data(), data.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(data.size()));
  }
  // True when the server closed the connection within the timeout.
  bool closed_by_server(std::chrono::milliseconds timeout) {
    timeval tv{0, static_cast<suseconds_t>(std::chrono::microseconds(timeout).count())};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char byte;
    return ::recv(fd_, &byte, 1, 0) == 0;
  }

 private:
  int fd_;
};

TEST(TcpStoreServer, GarbageCutsOffOnlyTheSender) {
  TcpStoreServer server(0);
  TcpStore good(TcpStoreOptions().port(server.port()).timeout(5s));
  good.set("before", std::string("1"));

  RawClient unknown_op(server.port());
  unknown_op.send({2, 0, 0, 0, 0xEE, 0x01});  // length 2, opcode 0xEE
  EXPECT_TRUE(unknown_op.closed_by_server(2000ms));

  RawClient huge(server.port());
  huge.send({0xFF, 0xFF, 0xFF, 0xFF});  // 4 GiB frame announced
  EXPECT_TRUE(huge.closed_by_server(2000ms));

  RawClient overrun(server.port());
  overrun.send({5, 0, 0, 0, 1, 0xFF, 0xFF, 0, 0});  // SET with a key longer than the frame
  EXPECT_TRUE(overrun.closed_by_server(2000ms));

  EXPECT_EQ(server.rejected_clients(), 3);
  EXPECT_EQ(good.get_string("before"), "1");
  good.set("after", std::string("2"));
  EXPECT_EQ(good.get_string("after"), "2");
}

TEST(TcpStoreServer, ClientVanishingMidRequestLeavesOthersServed) {
  TcpStoreServer server(0);
  {
    RawClient partial(server.port());
    partial.send({100, 0, 0, 0, 1, 3});  // announces 100 bytes, sends 2, then disappears
  }
  {
    // A client that parks a WAIT for key "z" (10 s) and vanishes: its waiter
    // must be dropped quietly, and setting "z" later must not reply to it.
    RawClient waiter(server.port());
    waiter.send({18, 0, 0, 0, 6, 1, 0, 0, 0, 1, 0, 0, 0, 'z', 0x10, 0x27, 0, 0, 0, 0, 0, 0});
    std::this_thread::sleep_for(50ms);
  }
  TcpStore good(TcpStoreOptions().port(server.port()).timeout(5s));
  good.set("z", std::string("late"));
  good.set("x", std::string("y"));
  EXPECT_EQ(good.get_string("x"), "y");
  EXPECT_EQ(server.rejected_clients(), 0);
}

TEST(TcpStoreServer, PortInUseIsNamed) {
  TcpStoreServer first(0);
  try {
    TcpStoreServer second(first.port());
    FAIL() << "two servers bound one port";
  } catch (const StoreError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(":" + std::to_string(first.port())), std::string::npos) << message;
    EXPECT_NE(message.find("in use"), std::string::npos) << message;
  }
}

TEST(TcpStore, ClientStartedBeforeServerConnectsWhenItComes) {
  std::uint16_t port = 0;
  {
    TcpStoreServer probe(0);  // find a free port, then free it
    port = probe.port();
  }
  std::unique_ptr<TcpStoreServer> server;
  std::thread starter([&] {
    std::this_thread::sleep_for(300ms);
    server = std::make_unique<TcpStoreServer>(port);
  });
  TcpStore client(TcpStoreOptions().port(port).timeout(10s));
  starter.join();
  client.set("k", std::string("v"));
  EXPECT_EQ(client.get_string("k"), "v");
}

TEST(TcpStore, UnreachableServerTimesOutNamingTheAddress) {
  std::uint16_t port = 0;
  {
    TcpStoreServer probe(0);
    port = probe.port();
  }
  const auto start = Clock::now();
  try {
    TcpStore client(TcpStoreOptions().port(port).timeout(300ms));
    FAIL() << "connected to nothing";
  } catch (const StoreTimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
  }
  EXPECT_LT(Clock::now() - start, 3s);
}

TEST(TcpStore, ServerGoingAwayIsAnErrorNotAHang) {
  auto server = std::make_unique<TcpStoreServer>(0);
  TcpStore client(TcpStoreOptions().port(server->port()).timeout(2s));
  client.set("k", std::string("v"));
  server.reset();
  const auto start = Clock::now();
  EXPECT_THROW(client.get("k"), StoreError);
  EXPECT_LT(Clock::now() - start, 15s);
}

TEST(TcpStore, OwnServerServesOtherClients) {
  TcpStore host(TcpStoreOptions().port(0).is_server(true).timeout(5s));
  TcpStore other(TcpStoreOptions().port(host.port()).timeout(5s));
  other.set("from", std::string("other"));
  EXPECT_EQ(host.get_string("from"), "other");
}

TEST(FileStore, ConcurrentProcessesNeverLoseAnAdd) {
  dtrain::testing::TempDir dir;
  const std::string path = dir.file("shared");
  constexpr int kProcesses = 3;
  constexpr int kAdds = 40;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      FileStore store(path, 5s);
      for (int i = 0; i < kAdds; ++i) {
        store.add("counter", 1);
        store.set("p" + std::to_string(p), std::to_string(i));
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  FileStore store(path, 5s);
  EXPECT_EQ(store.add("counter", 0), kProcesses * kAdds);
  EXPECT_EQ(store.get_string("p2"), std::to_string(kAdds - 1));
}

TEST(FileStore, PartialRecordFromACrashIsDropped) {
  dtrain::testing::TempDir dir;
  const std::string path = dir.file("store");
  {
    FileStore store(path, 1s);
    store.set("kept", std::string("yes"));
  }
  {
    std::ofstream torn(path, std::ios::binary | std::ios::app);
    const char partial[] = {9, 0, 0, 0, 'h', 'a', 'l'};  // key of 9 bytes, cut after 3
    torn.write(partial, sizeof(partial));
  }
  FileStore store(path, 1s);
  EXPECT_EQ(store.get_string("kept"), "yes");
  store.set("next", std::string("fine"));
  EXPECT_EQ(store.get_string("next"), "fine");
  EXPECT_EQ(store.num_keys(), 2);
}

TEST(FileStore, UnopenablePathIsNamed) {
  try {
    FileStore store("/no/such/dir/store");
    FAIL() << "opened a file in a missing directory";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("'/no/such/dir/store'"), std::string::npos) << e.what();
  }
}

}  // namespace
