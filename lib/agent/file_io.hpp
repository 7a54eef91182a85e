// SPDX-License-Identifier: BSD-3-Clause
// Small POSIX file helpers shared by the state file (persist.cpp) and the journal
// (journal.cpp): both write with write(2) + fsync and report errno in the same words.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

namespace srv6gw::agent::file_io {

// "WHAT PATH: strerror(errno)".
inline std::string errno_text(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// Writes all of `data` (retrying short writes and EINTR); false with errno set on failure.
inline bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(size_t(n));
  }
  return true;
}

}  // namespace srv6gw::agent::file_io
