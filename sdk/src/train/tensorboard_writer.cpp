// Compiled without LibTorch's include paths: the torch wheel carries an
// older protobuf's headers (Note [LibTorch's bundled protobuf] in
// cmake/DtrainDependencies.cmake).
#include "dtrain/train/tensorboard_writer.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "dtrain/util/errors.h"
#include "tensorboard_event.pb.h"
#include "tfrecord.h"

namespace dtrain::train {

namespace {

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof(name) - 1) == 0 ? std::string(name) : std::string("localhost");
}

// events.out.tfevents.<unix seconds>.<host>.<pid>.<n>, as TensorBoard's own
// writers name files (n: this process's writers so far).
std::string event_file_name() {
  static std::atomic<int> writers{0};
  return fmt::format("events.out.tfevents.{}.{}.{}.{}", static_cast<std::int64_t>(seconds_now()),
                     host_name(), getpid(), writers++);
}

}  // namespace

struct TensorBoardWriter::File {
  std::string directory;
  std::string path;
  std::ofstream out;

  void write(const tensorboard::Event& event) {
    out << detail::tfrecord(event.SerializeAsString());
    check();
  }
  void check() const {
    if (!out) {
      throw IOError(fmt::format("cannot write TensorBoard events to '{}' (file {})", directory,
                                std::filesystem::path(path).filename().string()));
    }
  }
};

TensorBoardWriter::TensorBoardWriter(const std::string& directory)
    : file_(std::make_unique<File>()) {
  file_->directory = directory;
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) {
    throw IOError(fmt::format("cannot create the TensorBoard directory '{}': {}", directory,
                              error.message()));
  }
  file_->path = (std::filesystem::path(directory) / event_file_name()).string();
  file_->out.open(file_->path, std::ios::binary | std::ios::trunc);
  if (!file_->out) {
    throw IOError(fmt::format("cannot write TensorBoard events to '{}': cannot create {}",
                              directory, file_->path));
  }
  tensorboard::Event version;
  version.set_wall_time(seconds_now());
  version.set_file_version("brain.Event:2");
  file_->write(version);
  flush();
}

TensorBoardWriter::~TensorBoardWriter() {
  if (!file_) {
    return;  // moved from
  }
  try {
    flush();
  } catch (const Error& e) {
    spdlog::warn("{}", e.what());
  }
}

TensorBoardWriter::TensorBoardWriter(TensorBoardWriter&&) noexcept = default;
TensorBoardWriter& TensorBoardWriter::operator=(TensorBoardWriter&&) noexcept = default;

void TensorBoardWriter::add_scalar(const std::string& tag, std::int64_t step, double value) {
  add_scalar(tag, step, value, seconds_now());
}

void TensorBoardWriter::add_scalar(const std::string& tag, std::int64_t step, double value,
                                   double wall_time) {
  tensorboard::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  tensorboard::Summary::Value* scalar = event.mutable_summary()->add_value();
  scalar->set_tag(tag);
  scalar->set_simple_value(static_cast<float>(value));
  file_->write(event);
}

void TensorBoardWriter::flush() {
  file_->out.flush();
  file_->check();
}

const std::string& TensorBoardWriter::path() const {
  return file_->path;
}

}  // namespace dtrain::train
