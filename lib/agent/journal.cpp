// SPDX-License-Identifier: BSD-3-Clause
#include "agent/journal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "agent/convert.hpp"
#include "agent/file_io.hpp"
#include "net/addr.hpp"

namespace srv6gw::agent {

namespace {

constexpr uint32_t kMagic = 0x324A5253;   // "SRJ2" little-endian
constexpr uint32_t kMagic1 = 0x314A5253;  // "SRJ1": format 1
constexpr uint8_t kSectionChanges = 1, kSectionEngine = 2, kSectionPathsDown = 4;
// A record larger than this is not a record (a 1M-rule batch is ~60 MB).
constexpr uint32_t kMaxBody = 1u << 30;

uint32_t crc(const void* data, size_t n) {
  return uint32_t(::crc32(::crc32(0L, Z_NULL, 0), static_cast<const Bytef*>(data), uInt(n)));
}

void put(std::string& out, const void* p, size_t n) {
  out.append(static_cast<const char*>(p), n);
}
template <typename T>
void put_int(std::string& out, T v) {
  // x86-64 and aarch64 are little-endian; the format is.
  static_assert(std::endian::native == std::endian::little);
  put(out, &v, sizeof v);
}
template <typename T>
T get_int(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct Reader {
  std::string_view s;
  bool ok = true;
  template <typename T>
  T take() {
    if (s.size() < sizeof(T)) {
      ok = false;
      return T{};
    }
    T v = get_int<T>(s.data());
    s.remove_prefix(sizeof(T));
    return v;
  }
  std::string_view bytes(size_t n) {
    if (s.size() < n) {
      ok = false;
      return {};
    }
    auto v = s.substr(0, n);
    s.remove_prefix(n);
    return v;
  }
};

using file_io::errno_text;
using file_io::write_all;

std::string header_line(std::string_view format = kJournalFormat) {
  return std::string(format) + "\n";
}

// Decodes a record's body; "" or why not.
std::string decode_body(std::string_view body, JournalRecord& r) {
  Reader in{body};
  r.generation = in.take<uint64_t>();
  const uint8_t sections = in.take<uint8_t>();
  if (!in.ok) return "body too short";
  if (sections & ~(kSectionChanges | kSectionEngine | kSectionPathsDown))
    return "unknown sections " + std::to_string(sections);
  if (sections & kSectionChanges) {
    const auto bytes = in.bytes(in.take<uint32_t>());
    v1::ApplyRequest req;
    if (!in.ok || !req.ParseFromArray(bytes.data(), int(bytes.size())))
      return "config changes do not parse";
    FieldError fe;
    for (int i = 0; i < req.changes_size(); ++i) {
      const v1::Change& c = req.changes(i);
      const std::string where = "changes[" + std::to_string(i) + "]";
      if (c.has_upsert_policy()) {
        config::Policy p;
        if (!from_proto(c.upsert_policy(), p, fe))
          return where + "." + fe.field + ": " + fe.message;
        std::string name = p.name;
        r.changes.policies.emplace_back(std::move(name), std::move(p));
      } else if (c.has_delete_policy()) {
        r.changes.policies.emplace_back(c.delete_policy(), std::nullopt);
      } else if (c.has_upsert_steering()) {
        config::SteeringRule rule;
        if (!from_proto(c.upsert_steering(), rule, fe))
          return where + "." + fe.field + ": " + fe.message;
        r.changes.rules.emplace_back(rule.id, std::move(rule));
      } else if (c.has_delete_steering()) {
        r.changes.rules.emplace_back(c.delete_steering(), std::nullopt);
      } else if (c.has_upsert_local_sid()) {
        config::LocalSid ls;
        if (!from_proto(c.upsert_local_sid(), ls, fe))
          return where + "." + fe.field + ": " + fe.message;
        r.changes.local_sids.emplace_back(ls.sid, ls);
      } else if (c.has_delete_local_sid()) {
        auto sid = net::parse_ipv6(c.delete_local_sid());
        if (!sid) return where + ": bad local SID";
        r.changes.local_sids.emplace_back(*sid, std::nullopt);
      } else if (c.has_upsert_rail()) {
        config::Rail rail;
        if (!from_proto(c.upsert_rail(), rail, fe))
          return where + "." + fe.field + ": " + fe.message;
        r.changes.rails.push_back(std::move(rail));
      } else {
        return where + ": empty change";
      }
    }
  }
  if (sections & kSectionEngine) {
    const auto bytes = in.bytes(in.take<uint32_t>());
    v1::EngineParams p;
    if (!in.ok || !p.ParseFromArray(bytes.data(), int(bytes.size())))
      return "engine parameters do not parse";
    engine::Params e;
    if (auto bad = merge_engine_params(p, e); !bad.empty()) return bad;
    r.engine = e;
  }
  if (sections & kSectionPathsDown) {
    Reader list{in.bytes(in.take<uint32_t>())};
    const uint32_t n = list.take<uint32_t>();
    std::vector<PathDown> down;
    for (uint32_t i = 0; i < n && list.ok; ++i) {
      PathDown d;
      d.path_id = list.take<uint16_t>();
      d.policy = std::string(list.bytes(list.take<uint16_t>()));
      d.segment_list = std::string(list.bytes(list.take<uint16_t>()));
      down.push_back(std::move(d));
    }
    if (!list.ok || !list.s.empty()) return "paths down do not parse";
    r.paths_down = std::move(down);
  }
  if (!in.ok || !in.s.empty()) return "body length does not match its sections";
  return "";
}

bool all_zero(std::string_view s) {
  for (const char c : s)
    if (c != 0) return false;
  return true;
}

}  // namespace

std::string journal_path(const std::string& state_path) {
  return state_path + ".journal";
}

void encode_record(uint64_t sequence, uint64_t durable, uint64_t generation,
                   const Changeset* changes, const engine::Params* engine,
                   const std::vector<PathDown>* paths_down, std::string& out) {
  std::string body;
  put_int<uint64_t>(body, generation);
  const uint8_t sections =
      uint8_t((changes && changes->size() ? kSectionChanges : 0) | (engine ? kSectionEngine : 0) |
              (paths_down ? kSectionPathsDown : 0));
  put_int<uint8_t>(body, sections);
  if (sections & kSectionChanges) {
    v1::ApplyRequest req;
    req.mutable_changes()->Reserve(int(changes->size()));
    for (const auto& [name, p] : changes->policies) {
      if (p)
        to_proto(*p, *req.add_changes()->mutable_upsert_policy());
      else
        req.add_changes()->set_delete_policy(name);
    }
    for (const auto& [id, rule] : changes->rules) {
      if (rule)
        to_proto(*rule, *req.add_changes()->mutable_upsert_steering());
      else
        req.add_changes()->set_delete_steering(id);
    }
    for (const auto& [sid, ls] : changes->local_sids) {
      if (ls)
        to_proto(*ls, *req.add_changes()->mutable_upsert_local_sid());
      else
        req.add_changes()->set_delete_local_sid(net::to_string(sid));
    }
    for (const config::Rail& rail : changes->rails)
      to_proto(rail, *req.add_changes()->mutable_upsert_rail());
    const std::string bytes = req.SerializeAsString();
    put_int<uint32_t>(body, uint32_t(bytes.size()));
    body += bytes;
  }
  if (engine) {
    v1::EngineParams p;
    to_proto(*engine, p);
    const std::string bytes = p.SerializeAsString();
    put_int<uint32_t>(body, uint32_t(bytes.size()));
    body += bytes;
  }
  if (paths_down) {
    std::string list;
    put_int<uint32_t>(list, uint32_t(paths_down->size()));
    for (const PathDown& d : *paths_down) {
      put_int<uint16_t>(list, d.path_id);
      const std::string_view policy = std::string_view(d.policy).substr(0, 0xFFFF);
      const std::string_view sl = std::string_view(d.segment_list).substr(0, 0xFFFF);
      put_int<uint16_t>(list, uint16_t(policy.size()));
      put(list, policy.data(), policy.size());
      put_int<uint16_t>(list, uint16_t(sl.size()));
      put(list, sl.data(), sl.size());
    }
    put_int<uint32_t>(body, uint32_t(list.size()));
    body += list;
  }
  const size_t start = out.size();
  put_int<uint32_t>(out, kMagic);
  put_int<uint32_t>(out, uint32_t(body.size()));
  put_int<uint64_t>(out, sequence);
  put_int<uint64_t>(out, durable);
  put_int<uint32_t>(out, crc(out.data() + start, 24));
  put_int<uint32_t>(out, crc(body.data(), body.size()));
  out += body;
}

void encode_record(const JournalRecord& r, std::string& out) {
  encode_record(r.sequence, r.durable, r.generation, &r.changes, r.engine ? &*r.engine : nullptr,
                r.paths_down ? &*r.paths_down : nullptr, out);
}

std::optional<JournalContents> read_journal(const std::string& path, uint64_t after, bool decode,
                                            std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = errno_text("cannot open", path);
    return std::nullopt;
  }
  std::string data;
  struct stat st {};
  if (::fstat(fd, &st) == 0) data.reserve(size_t(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = errno_text("cannot read", path);
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    data.append(buf, size_t(n));
  }
  ::close(fd);

  JournalContents c;
  std::string head = header_line();
  if (data.compare(0, head.size(), head) == 0) {
    c.format = 2;
  } else if (data.compare(0, head.size(), header_line(kJournalFormat1)) == 0) {
    c.format = 1;
  } else {
    // A header cut short by a crash while the journal was being created (it is written
    // before any record and synced before use) would be an empty journal.
    if (data.size() < head.size() && head.compare(0, data.size(), data) == 0) {
      c.torn_bytes = data.size();
      return c;
    }
    error = path + ": not a journal of format \"" + std::string(kJournalFormat) + "\" (or \"" +
            std::string(kJournalFormat1) + "\")";
    return std::nullopt;
  }
  const bool v1 = c.format == 1;
  const size_t header_size = v1 ? kJournalRecordHeader1 : kJournalRecordHeader;
  const size_t header_crc_at = header_size - 8;
  const uint32_t magic_expected = v1 ? kMagic1 : kMagic;
  // Format 2: the highest durable sequence a readable record after `from` carries (0: none).
  auto marked_durable_after = [&](size_t from) {
    uint64_t marked = 0;
    char magic_bytes[4];
    std::memcpy(magic_bytes, &kMagic, 4);
    const std::string_view all(data);
    for (size_t p = all.find(std::string_view(magic_bytes, 4), from); p != std::string_view::npos;
         p = all.find(std::string_view(magic_bytes, 4), p + 1)) {
      if (p + header_size > all.size()) break;
      const char* h = all.data() + p;
      if (get_int<uint32_t>(h + header_crc_at) == crc(h, header_crc_at))
        marked = std::max(marked, get_int<uint64_t>(h + 16));
    }
    return marked;
  };
  size_t at = head.size();
  c.good_bytes = at;
  uint64_t expected = 0;  // 0: the first record may have any sequence
  // A record that is not whole: a torn tail when nothing after it was durable, else corruption
  // (format 2); format 1: torn when it ends the file.
  auto bad_record = [&](const std::string& why, bool ends_file) {
    const std::string_view rest = std::string_view(data).substr(at);
    if (v1) {
      if (ends_file)
        c.torn_bytes = rest.size();
      else
        c.corrupt = why;
      return;
    }
    // The first sequence the bad bytes can hold.
    const uint64_t first = c.last_sequence ? c.last_sequence + 1 : after + 1;
    const uint64_t marked = marked_durable_after(at + 1);
    if (marked >= first) {
      c.corrupt = why + "; a later record says sequence " + std::to_string(marked) + " was durable";
      return;
    }
    c.torn_bytes = rest.size();
    c.torn = why + "; " + std::to_string(rest.size()) +
             " bytes from there on hold no record known durable";
  };
  while (at < data.size()) {
    const std::string_view rest = std::string_view(data).substr(at);
    const std::string where = path + ": record at byte " + std::to_string(at);
    if (rest.size() < header_size) {
      c.torn_bytes = rest.size();
      c.torn = where + ": incomplete header";
      break;
    }
    const char* h = rest.data();
    const uint32_t magic = get_int<uint32_t>(h);
    const uint32_t length = get_int<uint32_t>(h + 4);
    const uint64_t sequence = get_int<uint64_t>(h + 8);
    if (magic != magic_expected || get_int<uint32_t>(h + header_crc_at) != crc(h, header_crc_at) ||
        length > kMaxBody) {
      if (all_zero(rest)) {  // space the file system allocated but the write never filled
        c.torn_bytes = rest.size();
        c.torn = where + ": zeros to the end";
      } else {
        bad_record(where + ": bad record header (magic or checksum)", false);
      }
      break;
    }
    if (rest.size() < header_size + length) {
      c.torn_bytes = rest.size();
      c.torn = where + " (sequence " + std::to_string(sequence) + "): incomplete";
      break;
    }
    const std::string_view body = rest.substr(header_size, length);
    if (get_int<uint32_t>(h + header_size - 4) != crc(body.data(), body.size())) {
      bad_record(where + " (sequence " + std::to_string(sequence) + "): checksum mismatch" +
                     (rest.size() == header_size + length ? "" : " with more records after it"),
                 rest.size() == header_size + length);
      break;
    }
    if (expected != 0 && sequence != expected) {
      c.corrupt = where + ": sequence " + std::to_string(sequence) + " where " +
                  std::to_string(expected) + " was expected";
      break;
    }
    if (sequence == 0) {
      c.corrupt = where + ": sequence 0";
      break;
    }
    JournalRecord r;
    r.sequence = sequence;
    if (!v1) r.durable = get_int<uint64_t>(h + 16);
    if (length < 9) {
      c.corrupt = where + ": body too short";
      break;
    }
    r.generation = get_int<uint64_t>(body.data());
    if (sequence > after && decode) {
      if (auto why = decode_body(body, r); !why.empty()) {
        c.corrupt = where + " (sequence " + std::to_string(sequence) + "): " + why;
        break;
      }
    }
    c.last_sequence = sequence;
    c.last_generation = r.generation;
    if (sequence > after && decode) c.records.push_back(std::move(r));
    expected = sequence + 1;
    at += header_size + length;
    c.good_bytes = at;
  }
  return c;
}

std::string replay_record(const JournalRecord& r, AgentState& state, StateExtras& extras) {
  if (r.changes.size()) apply_changeset(r.changes, state);
  if (!r.changes.rails.empty()) extras.rails_from_agent = true;
  if (r.engine) {
    state.config.engine = *r.engine;
    extras.engine_params_from_agent = true;
  }
  if (r.paths_down) extras.paths_down = *r.paths_down;
  state.generation = r.generation;
  return "";
}

namespace {
std::mutex sync_observer_mutex;
SyncObserver sync_observer;  // guarded by sync_observer_mutex
}  // namespace

void set_sync_observer(SyncObserver observer) {
  std::lock_guard lock(sync_observer_mutex);
  sync_observer = std::move(observer);
}

std::unique_ptr<JournalWriter> JournalWriter::create(const std::string& path,
                                                     uint64_t last_sequence, std::string& error,
                                                     std::string_view records) {
  const std::filesystem::path target(path);
  const std::filesystem::path dir =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) {
    error = errno_text("cannot create", tmp);
    return nullptr;
  }
  const std::string head = header_line();
  if (!write_all(fd, head) || !write_all(fd, records) || ::fsync(fd) != 0) {
    error = errno_text("cannot write", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return nullptr;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    error = errno_text("cannot rename " + tmp + " to", path);
    ::unlink(tmp.c_str());
    return nullptr;
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || ::fsync(dfd) != 0) {
    error = errno_text("cannot fsync directory", dir.string());
    if (dfd >= 0) ::close(dfd);
    return nullptr;
  }
  ::close(dfd);
  return open(path, head.size() + records.size(), last_sequence, error);
}

std::unique_ptr<JournalWriter> JournalWriter::open(const std::string& path, size_t good_bytes,
                                                   uint64_t last_sequence, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    error = errno_text("cannot open", path);
    return nullptr;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    error = errno_text("cannot stat", path);
    ::close(fd);
    return nullptr;
  }
  // A torn tail is cut off so that the next record follows the last good one; what stays
  // is made durable (a process killed before its sync leaves its records in the page cache),
  // so that the next record can say so.
  if ((size_t(st.st_size) != good_bytes && ::ftruncate(fd, off_t(good_bytes)) != 0) ||
      ::fsync(fd) != 0) {
    error = errno_text("cannot cut the torn tail of", path);
    ::close(fd);
    return nullptr;
  }
  if (::lseek(fd, off_t(good_bytes), SEEK_SET) < 0) {
    error = errno_text("cannot seek in", path);
    ::close(fd);
    return nullptr;
  }
  return std::unique_ptr<JournalWriter>(new JournalWriter(fd, path, good_bytes, last_sequence));
}

JournalWriter::~JournalWriter() {
  if (fd_ >= 0) ::close(fd_);
}

std::string JournalWriter::write(std::string_view framed, uint64_t sequence) {
  if (broken()) return path_ + ": the journal needs replacing after an earlier failure";
  if (write_all(fd_, framed)) {
    bytes_ += framed.size();
    written_sequence_.store(sequence);  // after the write: a sync started now covers it
    return "";
  }
  std::string why = errno_text("cannot write", path_);
  // Cut back what was written, so that the next record follows the last one written whole.
  if (::ftruncate(fd_, off_t(bytes())) != 0 || ::lseek(fd_, off_t(bytes()), SEEK_SET) < 0)
    broken_ = true;
  return why;
}

std::string JournalWriter::sync() {
  if (broken()) return path_ + ": the journal needs replacing after an earlier failure";
  // Every record counted in bytes_ was written whole before this fdatasync started.
  const uint64_t sequence = written_sequence_.load();
  const size_t covered = bytes();
  if (::fdatasync(fd_) != 0) return errno_text("cannot fdatasync", path_);
  // Written to a file nobody can find again (the directory was removed or replaced) is not
  // persisted.
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || st.st_nlink == 0) {
    broken_ = true;
    return path_ + ": the journal file was removed";
  }
  // Concurrent syncs (a compaction's and a waiter's) may finish in any order: keep the highest.
  uint64_t durable = durable_sequence_.load();
  while (durable < sequence && !durable_sequence_.compare_exchange_weak(durable, sequence)) {
  }
  std::lock_guard lock(sync_observer_mutex);
  if (sync_observer) sync_observer(path_, covered);
  return "";
}

std::string JournalWriter::cut_back(size_t bytes, uint64_t last_sequence) {
  if (::ftruncate(fd_, off_t(bytes)) != 0 || ::lseek(fd_, off_t(bytes), SEEK_SET) < 0 ||
      ::fdatasync(fd_) != 0) {
    broken_ = true;
    return errno_text("cannot cut back", path_);
  }
  bytes_ = bytes;
  written_sequence_.store(last_sequence);
  // Records rolled back were never durable; this only guards a caller's mistake.
  if (durable_sequence_.load() > last_sequence) durable_sequence_.store(last_sequence);
  return "";
}

std::optional<std::string> JournalWriter::read_from(size_t from, std::string& error) const {
  std::string out(bytes() - std::min(from, bytes()), '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, off_t(from + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno_text("cannot read", path_) : path_ + ": shorter than written";
      return std::nullopt;
    }
    done += size_t(n);
  }
  return out;
}

std::string JournalWriter::append(std::string_view framed, uint64_t sequence) {
  const size_t before = bytes();
  const uint64_t sequence_before = written_sequence_.load();
  if (auto why = write(framed, sequence); !why.empty()) return why;
  auto why = sync();
  if (!why.empty() && !broken()) cut_back(before, sequence_before);
  return why;
}

}  // namespace srv6gw::agent
