#include "transport.h"

#include "dtrain/dist/process_group.h"
#include "dtrain/util/errors.h"
#include "flight_recorder.h"
#include "rank_records.h"
#include "timeout_diagnosis.h"

namespace dtrain::dist::detail {

WorkPtr Transport::numbered(OpContext ctx, c10::function_ref<WorkPtr(OpContext&)> start) {
  std::lock_guard<std::mutex> lock(issue_mutex_);
  ctx.seq = collectives_ + 1;
  WorkPtr work = start(ctx);
  collectives_ = ctx.seq;
  return work;
}

void run_in_turn(InTurnRef in_turn, const OpContext& ctx) {
  if (ctx.record_id == 0) {
    in_turn(ctx);
    return;
  }
  FlightRecorder& recorder = flight_recorder();
  recorder.started(ctx.record_id);
  try {
    in_turn(ctx);
  } catch (...) {
    recorder.finished(ctx.record_id, false);
    throw;
  }
  recorder.finished(ctx.record_id, true);
}

c10::Device Transport::staging_device(const std::string& what) {
  throw Error(what + ": this backend stages no tensors");
}

void Transport::check_tag(int tag, const std::string& what) const {
  DTRAIN_CHECK(tag >= 0, what, ": tag must be >= 0, got ", tag);
}

std::vector<std::vector<at::Tensor>> root_blocks(const at::Tensor& all, int rank, int root,
                                                 int size) {
  if (rank != root) {
    return {};
  }
  return {all.view({-1}).chunk(size)};  // views: the blocks are written in place
}

std::string diagnose_timeout(const std::shared_ptr<Store>& store, const ProcessGroup& group,
                             const OpContext& ctx) {
  if (!store || ctx.seq == 0) {
    return "";
  }
  // Under dtrun, the ranks meet in dtrun's store, which no stopped rank hosts.
  const auto records = records_store();
  const std::shared_ptr<Store> meeting =
      records ? std::make_shared<store::PrefixStore>("diagnosis/" + group.name(), records) : store;
  Diagnosis diagnosis = diagnose_timeout(meeting, group.name(), group.rank(), group.global_ranks(),
                                         ctx.seq, ctx.op, diagnosis_grace(ctx.timeout));
  store::FailureRecord record;
  record.rank = group.global_ranks()[static_cast<std::size_t>(group.rank())];
  record.group = group.name();
  record.seq = ctx.seq;
  record.op = ctx.op;
  record.missing = diagnosis.missing;
  record.message = ctx.what + ": timed out after " + std::to_string(ctx.timeout.count()) + " ms" +
                   diagnosis.text;
  report_collective_timeout(record);
  return diagnosis.text;
}

}  // namespace dtrain::dist::detail
