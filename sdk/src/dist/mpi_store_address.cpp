// The store's address shared through MPI, for a job started by mpirun
// without MASTER_PORT (mpi_backend.h).
//
// Note [The store's address through MPI]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Horovod users start `mpirun -np 4 ./train` and expect it to run: MPI
// already connects the ranks, so asking them to pick a free port on rank 0's
// host and pass it with -x is a chore that also fails when two jobs meet on
// one port. Under mpirun, with MASTER_PORT unset, rank 0 hosts the store on
// a port the kernel chooses and tells the others through MPI:
//
//   1. rank 0 broadcasts its host name; every rank says whether it runs on
//      that host (one all-reduce), so all know whether the job is on one host;
//   2. rank 0 picks the address the others dial: MASTER_ADDR when set, else
//      127.0.0.1 when the job is on one host, else its host name when that
//      resolves to an address other than loopback there (Debian's /etc/hosts
//      maps the host name to 127.0.1.1, which no other host can reach);
//   3. rank 0 starts the store on port 0 and broadcasts the port and the
//      address, or, when step 2 or the store failed, port 0 and the reason,
//      which every rank raises, so no rank waits for a store that never came.
//
// The MPI calls are non-blocking and polled against the init timeout: a rank
// that never calls init_process_group makes the others raise, not hang.
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include <spdlog/spdlog.h>

#include "dtrain/dist/store_names.h"
#include "dtrain/dist/types.h"
#include "dtrain/store/host_port.h"
#include "dtrain/store/socket.h"
#include "dtrain/util/errors.h"
#include "interfaces.h"
#include "mpi_backend.h"
#include "mpi_runtime.h"

namespace dtrain::dist {

namespace {

constexpr std::size_t kTextBytes = 512;
using Text = std::array<char, kTextBytes>;

Text to_text(const std::string& value) {
  Text text{};
  std::strncpy(text.data(), value.c_str(), kTextBytes - 1);
  return text;
}

constexpr int kTextCount = static_cast<int>(kTextBytes);

// Raises dtrain::Error naming the step when MPI refused to start it.
void started(int rc, const char* step) {
  DTRAIN_CHECK(rc == MPI_SUCCESS, "init_process_group: MPI failed to start ", step, " (error ", rc,
               ")");
}

// Waits for `request` until `deadline`; raises CollectiveTimeoutError naming
// the step.
void wait_for(MPI_Request& request, std::chrono::steady_clock::time_point deadline,
              std::chrono::milliseconds timeout, const char* step) {
  if (!mpi::poll(request, deadline, std::string("init_process_group: ") + step)) {
    throw CollectiveTimeoutError(std::string("init_process_group: not every rank arrived within ") +
                                 std::to_string(timeout.count()) + " ms while " + step +
                                 " through MPI (did every rank call init_process_group?)");
  }
}

// Step 1: rank 0's host name, into `root_host` on every rank, and whether
// every rank runs on that host.
bool whole_job_on_root_host(Text& root_host, std::chrono::steady_clock::time_point deadline,
                            std::chrono::milliseconds timeout) {
  const std::string mine = store::net::host_name();
  root_host = to_text(mine);
  MPI_Request request = MPI_REQUEST_NULL;
  started(MPI_Ibcast(root_host.data(), kTextCount, MPI_CHAR, 0, MPI_COMM_WORLD, &request),
          "sharing rank 0's host name");
  wait_for(request, deadline, timeout, "sharing rank 0's host name");
  int on_root_host = mine == root_host.data() ? 1 : 0;
  int all_on_root_host = 0;
  started(MPI_Iallreduce(&on_root_host, &all_on_root_host, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD,
                         &request),
          "finding the hosts of the job");
  wait_for(request, deadline, timeout, "finding the hosts of the job");
  return all_on_root_host != 0;
}

// What rank 0 tells the others: the port (0 when it failed) and the address
// to dial, or the reason it failed.
struct Announcement {
  std::int32_t port = 0;
  Text text{};
};

}  // namespace

std::shared_ptr<TcpStore> tcp_store_through_mpi(Rendezvous& rdzv,
                                                std::chrono::milliseconds timeout) {
  check_mpi_world(rdzv.rank, rdzv.world_size);  // MPI is up and agrees on the ranks
  const auto deadline = std::chrono::steady_clock::now() + timeout;

  // 1. Is the whole job on rank 0's host?
  Text root_host{};
  const bool all_on_root_host = whole_job_on_root_host(root_host, deadline, timeout);

  // 2 and 3. Rank 0 picks the address and starts the store.
  const char* master_addr = std::getenv("MASTER_ADDR");
  const bool addr_given = master_addr != nullptr && *master_addr != '\0';
  std::shared_ptr<TcpStore> store;
  Announcement announcement;
  if (rdzv.rank == 0) {
    std::string dial;
    if (addr_given) {
      dial = rdzv.host;  // MASTER_ADDR as resolve_rendezvous read it (brackets gone)
    } else if (all_on_root_host) {
      dial = "127.0.0.1";
    } else if (const auto towards = net::address_towards(root_host.data());
               towards && !store::net::is_loopback(*towards)) {
      dial = root_host.data();  // others reach it; the backends bind `towards` here
    }
    if (dial.empty()) {
      announcement.text = to_text(
          "init_process_group: the job runs on more than one host and rank 0's host name '" +
          std::string(root_host.data()) +
          "' does not resolve there to an address other hosts can reach; set MASTER_ADDR to "
          "rank 0's address (mpirun -x MASTER_ADDR=...)");
    } else {
      try {
        store = std::make_shared<TcpStore>(
            TcpStoreOptions().host("127.0.0.1").port(0).is_server(true).timeout(timeout));
        announcement.port = store->port();
        announcement.text = to_text(dial);
      } catch (const std::exception& e) {
        announcement.text = to_text(std::string("init_process_group: rank 0 could not start the "
                                                "store: ") +
                                    e.what());
      }
    }
  }
  // Bytes: every rank runs this same build on the same architecture.
  MPI_Request request = MPI_REQUEST_NULL;
  started(MPI_Ibcast(&announcement, static_cast<int>(sizeof(announcement)), MPI_BYTE, 0,
                     MPI_COMM_WORLD, &request),
          "sharing the store's address");
  wait_for(request, deadline, timeout, "sharing the store's address");
  if (announcement.port == 0) {
    throw Error(announcement.text.data());
  }

  rdzv.port = static_cast<std::uint16_t>(announcement.port);
  // Every rank, rank 0 too, names the store by the address the others dial:
  // the backends bind the local address on the route towards it.
  rdzv.host = announcement.text.data();
  rdzv.kind = Rendezvous::Kind::kTcp;
  spdlog::debug("init_process_group: the store at {}, shared through MPI",
                store::net::host_port(rdzv.host, rdzv.port));
  if (store) {
    return store;
  }
  try {
    return std::make_shared<TcpStore>(
        TcpStoreOptions().host(rdzv.host).port(rdzv.port).is_server(false).timeout(timeout));
  } catch (const StoreTimeoutError& e) {
    throw CollectiveTimeoutError(
        "init_process_group: rank " + std::to_string(rdzv.rank) + " could not reach the store at " +
        store::net::host_port(rdzv.host, rdzv.port) + " (from MPI): " + e.what());
  }
}

}  // namespace dtrain::dist
