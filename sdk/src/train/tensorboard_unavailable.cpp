// TensorBoardWriter in a build without Protobuf (libprotobuf-dev and
// protobuf-compiler): it cannot be made, and says why.
#include "dtrain/train/tensorboard_writer.h"

#include "dtrain/util/errors.h"

namespace dtrain::train {

struct TensorBoardWriter::File {
  std::string path;
};

TensorBoardWriter::TensorBoardWriter(const std::string& directory) {
  throw Error("cannot write TensorBoard events to '" + directory +
              "': this dtrain was built without Protobuf (install libprotobuf-dev and "
              "protobuf-compiler, then build again)");
}

TensorBoardWriter::~TensorBoardWriter() = default;
TensorBoardWriter::TensorBoardWriter(TensorBoardWriter&&) noexcept = default;
TensorBoardWriter& TensorBoardWriter::operator=(TensorBoardWriter&&) noexcept = default;

void TensorBoardWriter::add_scalar(const std::string&, std::int64_t, double) {}
void TensorBoardWriter::add_scalar(const std::string&, std::int64_t, double, double) {}
void TensorBoardWriter::flush() {}

const std::string& TensorBoardWriter::path() const {
  return file_->path;
}

}  // namespace dtrain::train
