// DebugProcessGroup: fingerprints every collective through the store and
// compares them across ranks before it runs on the wrapped group's transport.
#include "dtrain/dist/debug_process_group.h"

#include "collective_args.h"
#include "dtrain/dist/store_names.h"
#include "dtrain/util/launch_env.h"

namespace dtrain::dist {

namespace {

std::string tensor_text(const at::Tensor& t) {
  if (!t.defined()) {
    return "undefined";
  }
  std::string text = detail::dtype_name(t.scalar_type()) + "[";
  for (int64_t d = 0; d < t.dim(); ++d) {
    text += (d > 0 ? ", " : "") + std::to_string(t.size(d));
  }
  return text + "]";
}

std::string key(std::int64_t seq, int rank) {
  return "debug/" + std::to_string(seq) + "/" + std::to_string(rank);
}

}  // namespace

bool dist_debug_enabled() {
  return util::env_flag("DTRAIN_DIST_DEBUG").value_or(false);
}

ProcessGroupPtr wrap_for_debug_if_enabled(ProcessGroupPtr group, std::shared_ptr<Store> store,
                                          std::chrono::milliseconds timeout) {
  if (group == nullptr || !dist_debug_enabled()) {
    return group;
  }
  return std::make_shared<DebugProcessGroup>(std::move(group), std::move(store), timeout);
}

std::string describe_call(const std::string& op, const std::vector<at::Tensor>& tensors) {
  std::string text = op;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    text += (i == 0 ? " " : ", ") + tensor_text(tensors[i]);
  }
  return text;
}

DebugProcessGroup::DebugProcessGroup(ProcessGroupPtr inner, std::shared_ptr<Store> store,
                                     std::chrono::milliseconds timeout)
    : ProcessGroup(inner ? inner->rank() : 0, inner ? inner->size() : 1,
                   inner ? inner->name() : "null"),
      inner_(std::move(inner)),
      timeout_(timeout) {
  DTRAIN_CHECK(inner_ != nullptr, "DebugProcessGroup: the wrapped group is null");
  DTRAIN_CHECK(store != nullptr, "DebugProcessGroup '", name(), "': the store is null");
  DTRAIN_CHECK(timeout.count() > 0, "DebugProcessGroup '", name(),
               "': timeout must be positive, got ", timeout.count(), " ms");
  store_ = std::make_shared<PrefixStore>("group/" + name(), std::move(store));
  use_transport_of(*inner_);
}

void DebugProcessGroup::check_call(c10::function_ref<std::string()> call,
                                   std::chrono::milliseconds timeout) {
  const std::string fingerprint = call();
  std::lock_guard<std::mutex> lock(mutex_);
  const std::int64_t seq = ++seq_;
  const std::string label = "collective #" + std::to_string(seq);
  const auto wait_for = timeout.count() > 0 ? timeout : timeout_;
  std::vector<std::string> keys;
  for (int r = 0; r < size(); ++r) {
    keys.push_back(key(seq, r));
  }
  std::vector<std::string> calls;
  bool same = true;
  try {
    store_->set(keys[rank()], fingerprint);
    // Every rank published #seq-1 after finishing #seq-2, so nobody reads our #seq-2 any more.
    if (seq > 2) {
      store_->delete_key(key(seq - 2, rank()));
    }
    store_->wait(keys, wait_for);
    for (int r = 0; r < size(); ++r) {
      calls.push_back(r == rank() ? fingerprint : store_->get_string(keys[r]));
      same = same && calls[r] == calls[0];
    }
    if (!same) {
      // Note [Read before raising]: the store may live in rank 0, and a rank
      // that raises may exit and take it along; so every rank first says it
      // has read all the calls, and waits until all have, before raising.
      std::vector<std::string> read_keys;
      for (int r = 0; r < size(); ++r) {
        read_keys.push_back(key(seq, r) + "/read");
      }
      store_->set(read_keys[rank()], std::string("1"));
      store_->wait(read_keys, wait_for);
    }
  } catch (const StoreTimeoutError&) {
    if (!calls.empty()) {
      same = false;  // the mismatch was read; a slow peer must not hide it
    } else {
      std::string missing;
      std::string arrived;
      try {
        for (int r = 0; r < size(); ++r) {
          if (store_->check({keys[r]})) {
            arrived += ", rank " + std::to_string(r) + " called " + store_->get_string(keys[r]);
          } else {
            missing += (missing.empty() ? "" : ", ") + std::to_string(r);
          }
        }
      } catch (const StoreError& e) {
        missing = "? (the store failed: " + std::string(e.what()) + ")";
      }
      throw CollectiveTimeoutError(describe(fingerprint) + ": " + label + ": rank(s) " + missing +
                                   " did not reach it within " + std::to_string(wait_for.count()) +
                                   " ms" + arrived);
    }
  } catch (const StoreError& e) {
    if (calls.size() != static_cast<std::size_t>(size())) {
      throw CollectiveError(describe(fingerprint) + ": " + label +
                            ": the store failed while comparing the ranks' calls (" + e.what() +
                            ")");
    }
  }
  if (!same) {
    std::string message = label + " mismatch: ";
    for (int r = 0; r < size(); ++r) {
      message +=
          (r > 0 ? ", " : "") + std::string("rank ") + std::to_string(r) + " called " + calls[r];
    }
    throw CollectiveError(message + " (seen by rank " + std::to_string(rank()) + " of group '" +
                          name() + "')");
  }
}

}  // namespace dtrain::dist
