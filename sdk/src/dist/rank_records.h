// A rank's records for its launcher (dtrain/store/job_records.h) and its
// flight recorder's dumps (Note [Flight recorder], flight_recorder.h).
//
// Under dtrun (which names its store in the environment) a thread started
// with the default group keeps the rank's progress record up to date and
// dumps the recorder when dtrun's dump signal (kDumpSignal) arrives. A
// dump goes to the store and to DTRAIN_FLIGHT_RECORDER_DIR (else TMPDIR,
// else /tmp) as dtrain_flight_recorder_rank_<R>.json; outside dtrun, to the
// file only. Nothing here throws: records are evidence, never a new error.
#pragma once

#include <memory>
#include <string>

#include "dtrain/store/job_records.h"
#include "dtrain/store/store.h"

namespace dtrain::dist::detail {

// The signal dtrun sends to ask for a dump: a real-time one, which no
// scheduler sends and no default handler expects (installed only where
// the program left it at its default).
int dump_signal();

// Starts the records of rank `rank` of `world_size` (init_process_group of
// the default group); a second call changes nothing.
void start_rank_records(int rank, int world_size);

// dtrun's store, under the round's prefix, once connected; else nullptr.
// Every rank of a dtrun job reaches it, and no worker hosts it, so the
// timeout diagnosis meets there even when the job's store (hosted by rank
// 0) is stopped with its host.
std::shared_ptr<store::Store> records_store();

// A collective timed out: writes `record` to dtrun's store, then dumps the
// flight recorder. Takes at most a few seconds when the store is slow.
void report_collective_timeout(const store::FailureRecord& record);

// Dumps the flight recorder (to the store under dtrun, and to its file),
// logging `why`; returns the file's path, or "" when it could not be written.
std::string dump_flight_recorder(const std::string& why);

}  // namespace dtrain::dist::detail
