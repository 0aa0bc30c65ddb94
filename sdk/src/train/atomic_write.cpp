#include "atomic_write.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "dtrain/util/errors.h"

namespace dtrain::train::detail {

namespace fs = std::filesystem;

namespace {

// fsync of a file or directory; false (errno set) when it fails.
bool sync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  return synced;
}

}  // namespace

void write_atomically(const std::string& path, const std::string& bytes, const std::string& what) {
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), ec);
    DTRAIN_CHECK_AS(IOError, !ec, "cannot create directory '", target.parent_path().string(),
                    "' for ", what, " '", path, "': ", ec.message());
  }
  const std::string temporary = path + ".tmp-" + std::to_string(::getpid());
  auto fail = [&](const std::string& step) {
    const std::string reason = std::strerror(errno);
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw IOError(::dtrain::detail::concat("cannot write ", what, " '", path, "': ", step, " '",
                                           temporary, "': ", reason));
  };
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    fail("cannot create");
  }
  for (size_t written = 0; written < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      ::close(fd);
      fail("cannot write");
    }
    written += static_cast<size_t>(n);
  }
  // On disk before the rename: after a power cut the name must not point
  // at data the disk never got.
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("cannot flush to disk");
  }
  if (::close(fd) != 0) {
    fail("cannot close");
  }
  fs::rename(temporary, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw IOError(::dtrain::detail::concat("cannot move ", what, " into place at '", path,
                                           "': ", ec.message()));
  }
  // The rename itself lives in the directory.
  sync_file(target.has_parent_path() ? target.parent_path().string() : std::string("."));
}

void check_writable(const std::string& path, const std::string& what) {
  DTRAIN_CHECK_AS(IOError, !path.empty(), "the ", what, " path is empty");
  const fs::path target(path);
  std::error_code ec;
  DTRAIN_CHECK_AS(IOError, !fs::is_directory(target, ec), what, " '", path,
                  "' is a directory; name a file in it");
  const fs::path directory = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(directory, ec);
  DTRAIN_CHECK_AS(IOError, !ec, "cannot create directory '", directory.string(), "' for ", what,
                  " '", path, "': ", ec.message());
  DTRAIN_CHECK_AS(IOError, ::access(directory.c_str(), W_OK) == 0, "cannot write ", what, " '",
                  path, "': directory '", directory.string(), "': ", std::strerror(errno));
}

}  // namespace dtrain::train::detail
