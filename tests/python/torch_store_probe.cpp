// A TorchTcpStore client for tests/python/test_torch_store.py, which hosts
// PyTorch's own TCPStore and checks every call from both sides.
//
//   torch_store_probe HOST PORT
//
// Prints one line per call ("name value") for the test to compare, and
// exits 1 with the error on stderr when a call fails unexpectedly.
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

#include "dtrain/store/torch_tcp_store.h"
#include "dtrain/util/process_setup.h"

namespace {

std::string text(const dtrain::store::Bytes& bytes) {
  return {bytes.begin(), bytes.end()};
}

// The message of the StoreTimeoutError that `call` throws ("none" if it returns).
template <typename Call>
std::string timeout_of(Call call) {
  try {
    call();
    return "none";
  } catch (const dtrain::store::StoreTimeoutError& e) {
    return e.what();
  }
}

}  // namespace

int main(int argc, char** argv) {
  // dtrain's logging and crash traces; malloc keeps glibc's settings.
  dtrain::util::set_up_process(dtrain::util::ProcessSetup().retain_freed_host_memory(false));
  if (argc != 3) {
    std::fprintf(stderr, "usage: torch_store_probe HOST PORT\n");
    return 2;
  }
  try {
    using namespace std::chrono_literals;
    dtrain::store::TorchTcpStore store(argv[1], static_cast<std::uint16_t>(std::stoi(argv[2])),
                                       10s);
    std::printf("get %s\n", store.get_string("from_python").c_str());
    store.set("from_cpp", "written by C++");
    std::printf("add %lld\n", static_cast<long long>(store.add("counter", 5)));
    std::printf("compare_set_hit %s\n",
                text(store.compare_set("swap", {'o', 'l', 'd'}, {'n', 'e', 'w'})).c_str());
    std::printf("compare_set_miss %s\n", text(store.compare_set("swap", {'x'}, {'y'})).c_str());
    std::printf("check_present %d\n", store.check({"from_python", "from_cpp"}) ? 1 : 0);
    std::printf("check_missing %d\n", store.check({"from_python", "absent"}) ? 1 : 0);
    store.wait({"from_python", "swap"});
    std::printf("delete_present %d\n", store.delete_key("doomed") ? 1 : 0);
    std::printf("delete_missing %d\n", store.delete_key("doomed") ? 1 : 0);
    std::printf("num_keys %lld\n", static_cast<long long>(store.num_keys()));
    std::printf("wait_timeout %s\n", timeout_of([&] { store.wait({"absent"}, 200ms); }).c_str());
    store.set_timeout(200ms);
    std::printf("get_timeout %s\n", timeout_of([&] { store.get("absent"); }).c_str());
    // The connection still works after both cancelled waits.
    std::printf("after %s\n", store.get_string("from_python").c_str());
    // A key Python sets later, while this client waits for it.
    store.set("probe_waiting", "1");
    store.set_timeout(10s);
    std::printf("late %s\n", store.get_string("late").c_str());
    std::fflush(stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
