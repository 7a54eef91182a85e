// SPDX-License-Identifier: BSD-3-Clause
// The embedded default store: the state file (--state), or nothing (--state none). This
// process is the only controller: it always leads.
#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "store.hpp"

namespace srv6gw::sr_controller {
namespace {

// Whole-file write that a crash leaves old or new, never half: temp file, fsync, rename.
bool write_file_atomically(const std::string& path, const std::string& data, std::string& error) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    error = "cannot write " + tmp + ": " + std::strerror(errno);
    return false;
  }
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = "cannot write " + tmp + ": " + std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    off += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    error = "cannot write " + tmp + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

class LocalStore final : public Store {
 public:
  LocalStore(std::string path, std::string id) : path_(std::move(path)), id_(std::move(id)) {}
  std::string describe() const override { return path_.empty() ? "no state file" : path_; }
  bool load(cv1::PersistedState& out, std::string& error) override {
    out.Clear();
    if (path_.empty() || !std::filesystem::exists(path_)) return true;
    std::ifstream in(path_, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    auto status = google::protobuf::util::JsonStringToMessage(s.str(), &out);
    if (!status.ok()) {
      error = path_ + ": not a controller state file (" + std::string(status.message()) + ")";
      return false;
    }
    if (out.format().empty()) {
      error = path_ + ": not a controller state file (no format)";
      return false;
    }
    return true;
  }
  bool commit(const cv1::PersistedState& st, std::string& error) override {
    if (path_.empty()) return true;
    std::string json;
    google::protobuf::util::JsonPrintOptions opts;
    opts.add_whitespace = true;
    opts.preserve_proto_field_names = true;
    (void)google::protobuf::util::MessageToJsonString(st, &json, opts);
    ++writes_;
    return write_file_atomically(path_, json, error);
  }
  bool changed_since_load() override { return false; }
  bool start(std::function<void(const Leadership&)> on_change, std::string&) override {
    if (on_change) on_change(leadership());
    return true;
  }
  void stop() override {}
  Leadership leadership() const override { return {true, 0, id_, ""}; }
  bool may_push(uint64_t& term) const override {
    term = 0;
    return true;
  }
  Counters counters() const override { return {writes_, writes_}; }
  bool replicated() const override { return false; }

 private:
  std::string path_, id_;
  uint64_t writes_ = 0;
};

}  // namespace

std::unique_ptr<Store> make_local_store(const std::string& path, const std::string& id) {
  return std::make_unique<LocalStore>(path, id);
}

}  // namespace srv6gw::sr_controller
