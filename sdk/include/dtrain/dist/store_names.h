// The stores under their dist:: names (dtrain::dist::TcpStore, ...).
//
// The stores are their own module (dtrain/store/, namespace dtrain::store),
// which dtrun uses without the process groups. torch.distributed keeps its
// stores beside its process groups (torch.distributed.TCPStore), and so
// does the dist API that mirrors it: these names let code written against
// dtrain::dist, and dist's own signatures, name a store as before.
#pragma once

#include "dtrain/store/file_store.h"
#include "dtrain/store/prefix_store.h"
#include "dtrain/store/store.h"
#include "dtrain/store/tcp_store.h"
#include "dtrain/store/torch_tcp_store.h"

namespace dtrain::dist {

using store::Bytes;
using store::FileStore;
using store::PrefixStore;
using store::Store;
using store::StoreError;
using store::StoreTimeoutError;
using store::TcpStore;
using store::TcpStoreOptions;
using store::TcpStoreServer;
using store::TorchTcpStore;

}  // namespace dtrain::dist
