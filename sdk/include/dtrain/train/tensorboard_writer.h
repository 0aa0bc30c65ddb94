// dtrain::train::TensorBoardWriter: scalars in a TensorBoard event file,
// which TensorBoard, torch.utils.tensorboard's readers and W&B's sync read:
//
//   TensorBoardWriter writer("runs/pointnet2");
//   writer.add_scalar("train/loss", step, 0.52);
//   writer.flush();
//
// The file is DIR/events.out.tfevents.<unix seconds>.<host>.<pid>.<n>
// (n counts the writers of this process), its first event the version
// line "brain.Event:2". Scalars are buffered in the process: they reach the
// file at flush() and when the writer is destroyed, so a killed process
// loses those since the last flush. Not thread-safe. Throws dtrain::IOError
// naming the directory when it cannot be created or written (the
// destructor logs instead); in a build without Protobuf the constructor
// throws dtrain::Error saying so.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace dtrain::train {

class TensorBoardWriter {
 public:
  // Creates `directory` (and its parents) when missing, and the file.
  explicit TensorBoardWriter(const std::string& directory);
  ~TensorBoardWriter();
  TensorBoardWriter(TensorBoardWriter&&) noexcept;
  TensorBoardWriter& operator=(TensorBoardWriter&&) noexcept;

  // One value of the curve `tag` ("train/loss") at `step`, stamped now or
  // at `wall_time` (seconds since the Unix epoch). TensorBoard keeps float32.
  void add_scalar(const std::string& tag, std::int64_t step, double value);
  void add_scalar(const std::string& tag, std::int64_t step, double value, double wall_time);
  // Writes what is buffered to the file.
  void flush();

  const std::string& path() const;

 private:
  struct File;
  std::unique_ptr<File> file_;
};

}  // namespace dtrain::train
