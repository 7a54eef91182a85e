// SPDX-License-Identifier: BSD-3-Clause
#include "agent/persist.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "agent/batch.hpp"
#include "agent/file_io.hpp"
#include "agent/journal.hpp"
#include "config/json_output.hpp"
#include "config/loader.hpp"

namespace srv6gw::agent {

namespace {

constexpr std::string_view kFormat = "srv6gw-agent-state/2";
constexpr std::string_view kFormat1 = "srv6gw-agent-state/1";  // before the journal

std::string utc_time(const char* fmt) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt, &tm);
  return buf;
}

using file_io::errno_text;
using file_io::write_all;

// ---- a JSON scanner just big enough to split the state file into its top-level members ----
// (the "config" member is handed as text to libyang, which checks it thoroughly).

void skip_ws(std::string_view s, size_t& i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
}

bool skip_string(std::string_view s, size_t& i) {
  if (i >= s.size() || s[i] != '"') return false;
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      ++i;
      return true;
    }
  }
  return false;
}

bool skip_value(std::string_view s, size_t& i) {
  skip_ws(s, i);
  if (i >= s.size()) return false;
  if (s[i] == '"') return skip_string(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (c == '"') {
        if (!skip_string(s, i)) return false;
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (--depth == 0) {
          ++i;
          return true;
        }
      }
      ++i;
    }
    return false;
  }
  const size_t start = i;
  while (i < s.size() && std::strchr(",}] \t\r\n", s[i]) == nullptr) ++i;
  return i > start;
}

struct Members {
  std::string_view format, generation, config, journal_sequence;
  std::string_view engine_params_from_agent, paths_down, rails_from_agent;  // optional
};

// Splits {"k": v, ...}; "" when the text is not such an object. `head_only`: stops before
// the value of "config" (the members before it are the head).
std::string split_members(std::string_view s, Members& m, bool head_only = false) {
  size_t i = 0;
  skip_ws(s, i);
  if (i >= s.size() || s[i] != '{') return "not a JSON object";
  ++i;
  for (;;) {
    skip_ws(s, i);
    if (i < s.size() && s[i] == '}') {
      ++i;
      break;
    }
    const size_t key_start = i;
    if (!skip_string(s, i)) return "bad member name at byte " + std::to_string(key_start);
    const std::string_view key = s.substr(key_start + 1, i - key_start - 2);
    skip_ws(s, i);
    if (i >= s.size() || s[i] != ':') return "missing ':' at byte " + std::to_string(i);
    ++i;
    skip_ws(s, i);
    if (head_only && key == "config") return "";
    const size_t value_start = i;
    if (!skip_value(s, i)) return "truncated or bad value of \"" + std::string(key) + "\"";
    const std::string_view value = s.substr(value_start, i - value_start);
    if (key == "format") m.format = value;
    if (key == "generation") m.generation = value;
    if (key == "config") m.config = value;
    if (key == "journal-sequence") m.journal_sequence = value;
    if (key == "engine-params-from-agent") m.engine_params_from_agent = value;
    if (key == "paths-down") m.paths_down = value;
    if (key == "rails-from-agent") m.rails_from_agent = value;
    skip_ws(s, i);
    if (i < s.size() && s[i] == ',') {
      ++i;
      continue;
    }
    if (i < s.size() && s[i] == '}') {
      ++i;
      break;
    }
    return "expected ',' or '}' at byte " + std::to_string(i);
  }
  skip_ws(s, i);
  if (i != s.size()) return "trailing data at byte " + std::to_string(i);
  return "";
}

std::string json_string(std::string_view v) {
  std::string out = "\"";
  for (const char c : v) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", unsigned(c));
      out += b;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The optional members beside "config"; "" when sound, else why not.
std::string parse_extras(const Members& m, StateExtras& out) {
  if (!m.engine_params_from_agent.empty()) {
    if (m.engine_params_from_agent == "true")
      out.engine_params_from_agent = true;
    else if (m.engine_params_from_agent != "false")
      return "\"engine-params-from-agent\" is not true or false";
  }
  if (!m.rails_from_agent.empty()) {
    if (m.rails_from_agent == "true")
      out.rails_from_agent = true;
    else if (m.rails_from_agent != "false")
      return "\"rails-from-agent\" is not true or false";
  }
  if (m.paths_down.empty()) return "";
  google::protobuf::Value v;
  if (!google::protobuf::util::JsonStringToMessage(std::string(m.paths_down), &v).ok() ||
      !v.has_list_value())
    return "\"paths-down\" is not a JSON array";
  const auto& list = v.list_value().values();
  for (int i = 0; i < list.size(); ++i) {
    const std::string where = "\"paths-down\"[" + std::to_string(i) + "]";
    if (!list[i].has_struct_value()) return where + " is not an object";
    const auto& f = list[i].struct_value().fields();
    PathDown d;
    auto text = [&](const char* key, std::string& to) {
      auto it = f.find(key);
      if (it == f.end() || !it->second.has_string_value()) return false;
      to = it->second.string_value();
      return true;
    };
    if (!text("policy", d.policy)) return where + ": \"policy\" is missing or not a string";
    if (!text("segment-list", d.segment_list))
      return where + ": \"segment-list\" is missing or not a string";
    auto id = f.find("path-id");
    if (id == f.end() || !id->second.has_number_value() || id->second.number_value() < 0 ||
        id->second.number_value() > 65535 ||
        id->second.number_value() != double(uint16_t(id->second.number_value())))
      return where + ": \"path-id\" is missing or not an integer 0..65535";
    d.path_id = uint16_t(id->second.number_value());
    out.paths_down.push_back(std::move(d));
  }
  return "";
}

bool parse_u64(std::string_view v, uint64_t& out) {
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return !v.empty() && ec == std::errc() && p == v.data() + v.size();
}

// A JSON string's text, appended (GCC 12's -Wrestrict misfires on "\"" + std::string).
std::string quoted(std::string_view text) {
  std::string q = "\"";
  q += text;
  q += '"';
  return q;
}

// Format, generation and journal sequence of a snapshot's members; "" or why not.
std::string parse_head(const Members& m, SnapshotHead& h) {
  if (m.format == quoted(kFormat))
    h.format = 2;
  else if (m.format == quoted(kFormat1))
    h.format = 1;
  else
    return std::string("\"format\" is ") + (m.format.empty() ? "missing" : std::string(m.format)) +
           ", expected \"" + std::string(kFormat) + "\" (or \"" + std::string(kFormat1) + "\")";
  if (!parse_u64(m.generation, h.generation)) return "\"generation\" is not an unsigned integer";
  h.journal_sequence = 0;
  if (h.format == 2 && !parse_u64(m.journal_sequence, h.journal_sequence))
    return "\"journal-sequence\" is missing or not an unsigned integer";
  return "";
}

bool set_aside(const std::string& path, const char* why, std::string& moved_to) {
  moved_to = path + "." + why + "-" + utc_time("%Y%m%dT%H%M%SZ");
  std::error_code ec;
  std::filesystem::rename(path, moved_to, ec);
  if (ec) {
    spdlog::critical("cannot move the unusable state file {} aside to {}: {}", path, moved_to,
                     ec.message());
    moved_to.clear();
    return false;
  }
  return true;
}

}  // namespace

std::string check_state_directory(const std::string& state_path) {
  const std::filesystem::path sp(state_path);
  std::error_code ec;
  if (sp.has_parent_path()) std::filesystem::create_directories(sp.parent_path(), ec);
  if (ec) return "agent state directory " + sp.parent_path().string() + ": " + ec.message();
  const std::string probe = state_path + ".probe-" + std::to_string(::getpid());
  std::ofstream f(probe);
  if (!f)
    return "cannot write in the directory of the agent state file " + state_path + ": " +
           std::strerror(errno);
  f.close();
  std::filesystem::remove(probe, ec);
  return "";
}

std::string write_state_file(const std::string& path, const config::GatewayConfig& cfg,
                             uint64_t generation, const StateExtras& extras,
                             uint64_t journal_sequence, size_t* bytes_written) {
  // The head (format, generation, journal sequence) comes before the configuration, so that
  // read_snapshot_head() reads a few hundred bytes whatever the size.
  const std::string head = "{\n  \"format\": \"" + std::string(kFormat) +
                           "\",\n  \"generation\": " + std::to_string(generation) +
                           ",\n  \"journal-sequence\": " + std::to_string(journal_sequence) +
                           ",\n  \"written-at\": \"" + utc_time("%Y-%m-%dT%H:%M:%SZ") +
                           "\",\n  \"config\": ";
  std::string tail;
  if (extras.engine_params_from_agent) tail += ",\n  \"engine-params-from-agent\": true";
  if (extras.rails_from_agent) tail += ",\n  \"rails-from-agent\": true";
  if (!extras.paths_down.empty()) {
    tail += ",\n  \"paths-down\": [";
    for (size_t i = 0; i < extras.paths_down.size(); ++i) {
      const PathDown& d = extras.paths_down[i];
      tail += std::string(i ? "," : "") + "\n    {\"policy\": " + json_string(d.policy) +
              ", \"segment-list\": " + json_string(d.segment_list) +
              ", \"path-id\": " + std::to_string(d.path_id) + "}";
    }
    tail += "\n  ]";
  }
  tail += "\n}\n";

  const std::filesystem::path target(path);
  const std::filesystem::path dir =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return errno_text("cannot create", tmp);
  // Streamed in ~1 MB pieces as the configuration is written out (never held whole: a
  // million rules are ~100 MB of JSON), compact, and fsync'ed once at the end.
  size_t written = head.size() + tail.size();
  const std::function<bool(std::string_view)> out = [fd, &written](std::string_view piece) {
    written += piece.size();
    return write_all(fd, piece);
  };
  if (!write_all(fd, head) || !config::write_json(cfg, out, /*compact=*/true) ||
      !write_all(fd, tail)) {
    const std::string e = errno_text("cannot write", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return e;
  }
  if (::fsync(fd) != 0) {
    const std::string e = errno_text("cannot fsync", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return e;
  }
  if (::close(fd) != 0) {
    const std::string e = errno_text("cannot close", tmp);
    ::unlink(tmp.c_str());
    return e;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string e = errno_text("cannot rename " + tmp + " to", path);
    ::unlink(tmp.c_str());
    return e;
  }
  // The rename is durable only once the directory entry is.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return errno_text("cannot open directory", dir.string());
  const bool synced = ::fsync(dfd) == 0;
  const std::string e = synced ? "" : errno_text("cannot fsync directory", dir.string());
  ::close(dfd);
  if (bytes_written) *bytes_written = written;
  return e;
}

std::variant<SnapshotHead, std::string> read_snapshot_head(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot open " + path + ": " + std::strerror(errno);
  std::string text(4096, '\0');
  in.read(text.data(), std::streamsize(text.size()));
  text.resize(size_t(in.gcount()));
  Members m;
  if (auto why = split_members(text, m, /*head_only=*/true); !why.empty()) {
    return path + ": " + why;
  }
  SnapshotHead h;
  if (auto why = parse_head(m, h); !why.empty()) return path + ": " + why;
  return h;
}

namespace {

std::variant<PersistedState, std::string> read_snapshot(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot open " + path + ": " + std::strerror(errno);
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return "cannot read " + path;
  const std::string text = buf.str();

  Members m;
  if (auto why = split_members(text, m); !why.empty()) return path + ": " + why;
  SnapshotHead head;
  if (auto why = parse_head(m, head); !why.empty()) return path + ": " + why;
  PersistedState st;
  st.generation = head.generation;
  st.journal_sequence = head.journal_sequence;
  if (m.config.empty()) return path + ": \"config\" is missing";
  auto loaded = config::load_config_json(m.config);
  if (auto* e = std::get_if<config::ConfigError>(&loaded)) {
    return path + ": config: " + (e->path.empty() ? "" : e->path + ": ") + e->message;
  }
  st.config = std::move(std::get<config::GatewayConfig>(loaded));
  if (auto why = parse_extras(m, st.extras); !why.empty()) return path + ": " + why;
  return st;
}

}  // namespace

std::variant<PersistedState, std::string> read_state_file(const std::string& path,
                                                          bool accept_corrupt_journal) {
  auto read = read_snapshot(path);
  if (std::holds_alternative<std::string>(read)) return read;
  PersistedState& st = std::get<PersistedState>(read);
  const std::string jpath = journal_path(path);
  std::error_code ec;
  if (!std::filesystem::exists(jpath, ec)) return read;
  std::string error;
  auto journal = read_journal(jpath, st.journal_sequence, /*decode=*/true, error);
  if (!journal) {
    if (!accept_corrupt_journal) return error;
    st.journal_corrupt = error;
    return read;
  }
  st.torn_bytes = journal->torn_bytes;
  st.torn = journal->torn;
  if (!journal->corrupt.empty()) {
    if (!accept_corrupt_journal) return journal->corrupt;
    st.journal_corrupt = journal->corrupt;
  }
  if (!journal->records.empty() && journal->records.front().sequence != st.journal_sequence + 1) {
    const std::string why = jpath + ": the first record after the snapshot is sequence " +
                            std::to_string(journal->records.front().sequence) + ", expected " +
                            std::to_string(st.journal_sequence + 1);
    if (!accept_corrupt_journal) return why;
    st.journal_corrupt = why;
    return read;
  }
  if (journal->records.empty()) return read;
  auto state = make_state(std::move(st.config), st.generation);
  for (const JournalRecord& r : journal->records) {
    if (auto why = replay_record(r, *state, st.extras); !why.empty()) return jpath + ": " + why;
    st.journal_sequence = r.sequence;
    ++st.journal_records;
  }
  st.generation = state->generation;
  st.config = std::move(state->config);
  return read;
}

namespace {

// Sets the snapshot and its journal aside (those that exist); where they went, for the log.
std::string set_aside_state(const std::string& state_path, const char* why) {
  std::string moved, all;
  std::error_code ec;
  if (std::filesystem::exists(state_path, ec) && set_aside(state_path, why, moved)) all = moved;
  const std::string jpath = journal_path(state_path);
  if (std::filesystem::exists(jpath, ec) && set_aside(jpath, why, moved))
    all += (all.empty() ? "" : " and ") + moved;
  return all;
}

// A writer's temporary file (<state>.tmp-<pid>, <journal>.tmp-<pid>) that a crash left behind:
// its writer is gone. A live writer's (this process's own background snapshot, a test's second
// agent) is left alone.
bool writer_gone(std::string_view pid_text) {
  pid_t pid = 0;
  const auto [end, ec] = std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), pid);
  if (ec != std::errc() || end != pid_text.data() + pid_text.size() || pid <= 0) return false;
  return pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
}

void remove_leftover_temporaries(const std::string& state_path) {
  const std::filesystem::path state(state_path);
  const std::filesystem::path dir = state.has_parent_path() ? state.parent_path() : ".";
  const std::string name = state.filename().string();
  std::error_code ec;
  // Appended rather than `name + "..."` (GCC 12's -Wrestrict misfires on the latter).
  std::string snapshot_tmp = name, journal_tmp = name;
  snapshot_tmp += ".tmp-";
  journal_tmp += ".journal.tmp-";
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    for (const std::string& prefix : {snapshot_tmp, journal_tmp}) {
      if (f.rfind(prefix, 0) != 0 || !writer_gone(std::string_view(f).substr(prefix.size())))
        continue;
      std::error_code size_ec, rec;
      uintmax_t bytes = std::filesystem::file_size(e.path(), size_ec);
      if (size_ec) bytes = 0;
      if (std::filesystem::remove(e.path(), rec))
        spdlog::info(
            "removed {} ({} bytes): a snapshot or journal being written when the gateway "
            "stopped, never renamed into place",
            e.path().string(), bytes);
      else
        spdlog::warn("cannot remove the leftover {}: {}", e.path().string(), rec.message());
    }
  }
}

}  // namespace

StartupState restore_startup_state(const std::string& state_path,
                                   const config::GatewayConfig& file_config) {
  StartupState out;
  out.config = file_config;
  if (state_path.empty()) return out;
  remove_leftover_temporaries(state_path);
  std::error_code ec;
  if (!std::filesystem::exists(state_path, ec) && !ec) {
    if (std::filesystem::exists(journal_path(state_path), ec)) {
      // The agent writes a snapshot before it starts a journal: this one lost its base.
      spdlog::critical("AGENT JOURNAL {} HAS NO SNAPSHOT {}: it cannot be used",
                       journal_path(state_path), state_path);
      out.set_aside = set_aside_state(state_path, "corrupt");
      spdlog::critical(
          "the policies, steering rules and local SIDs pushed through the agent are NOT "
          "restored; starting from the configuration file only at generation 0{}{}",
          out.set_aside.empty() ? "" : "; the journal is kept as ", out.set_aside);
      return out;
    }
    spdlog::info("no agent state file {}: starting from the configuration file", state_path);
    return out;
  }
  auto read = read_state_file(state_path, /*accept_corrupt_journal=*/true);
  if (auto* why = std::get_if<std::string>(&read)) {
    spdlog::critical("AGENT STATE FILE IS UNUSABLE: {}", *why);
    out.set_aside = set_aside_state(state_path, "corrupt");
    spdlog::critical(
        "the policies, steering rules and local SIDs pushed through the agent are NOT restored; "
        "starting from the configuration file only at generation 0{}{}",
        out.set_aside.empty() ? "" : "; the bad file is kept as ", out.set_aside);
    return out;
  }
  auto& st = std::get<PersistedState>(read);
  if (st.torn_bytes)
    spdlog::info(
        "agent journal {}: dropped {} bytes after the last durable record ({}): changes being "
        "written when the gateway stopped, never acknowledged",
        journal_path(state_path), st.torn_bytes,
        st.torn.empty() ? "an incomplete record" : st.torn);
  config::GatewayConfig merged = file_config;
  std::vector<config::Rail> no_rails;
  merged.policies = std::move(st.config.policies);
  merged.steering = std::move(st.config.steering);
  merged.local_sids = std::move(st.config.local_sids);
  // What Apply may change of a rail (MACs, fabric VLAN, local SIDs) comes from the state once
  // Apply changed a rail; ports, queues, source and MTUs always from the file.
  for (config::Rail& r : st.extras.rails_from_agent ? merged.rails : no_rails) {
    for (const config::Rail& applied : st.config.rails) {
      if (applied.name != r.name) continue;
      r.fabric_nexthop_mac = applied.fabric_nexthop_mac;
      r.host_mac = applied.host_mac;
      r.fabric_port.vlan = applied.fabric_port.vlan;
      r.local_sids = applied.local_sids;
    }
  }
  if (st.extras.engine_params_from_agent) merged.engine = st.config.engine;
  if (auto e = config::validate(merged)) {
    spdlog::critical(
        "AGENT STATE FILE {} (generation {}) DOES NOT FIT THE CONFIGURATION FILE: {}: {}",
        state_path, st.generation, e->path, e->message);
    out.set_aside = set_aside_state(state_path, "rejected");
    spdlog::critical(
        "the policies, steering rules and local SIDs pushed through the agent are NOT restored; "
        "starting from the configuration file only at generation 0{}{}",
        out.set_aside.empty() ? "" : "; the state file is kept as ", out.set_aside);
    return out;
  }
  if (!st.journal_corrupt.empty()) {
    // The records before the corruption were acknowledged and are good: the state they give
    // is restored and becomes the new snapshot; the journal is kept for inspection.
    spdlog::critical("AGENT JOURNAL IS CORRUPT: {}", st.journal_corrupt);
    std::string moved;
    set_aside(journal_path(state_path), "corrupt", moved);
    out.set_aside = moved;
    spdlog::critical(
        "restoring the snapshot and the {} journal records before the corruption (generation "
        "{}); changes acknowledged after it are LOST{}{}",
        st.journal_records, st.generation, moved.empty() ? "" : "; the journal is kept as ", moved);
    if (auto why =
            write_state_file(state_path, merged, st.generation, st.extras, st.journal_sequence);
        !why.empty())
      spdlog::critical("cannot write the restored state as a new snapshot: {}", why);
  }
  out.config = std::move(merged);
  out.generation = st.generation;
  out.restored = true;
  out.extras.engine_params_from_agent = st.extras.engine_params_from_agent;
  out.extras.rails_from_agent = st.extras.rails_from_agent;
  for (PathDown& d : st.extras.paths_down) {
    bool known = false;
    for (const config::Policy& p : out.config.policies)
      for (const config::SegmentList& sl : p.segment_lists) known |= sl.path_id == d.path_id;
    if (known)
      out.extras.paths_down.push_back(std::move(d));
    else
      spdlog::warn("state file {}: path id {} ({}/{}) was down but no longer exists; dropped",
                   state_path, d.path_id, d.policy, d.segment_list);
  }
  spdlog::info(
      "restored agent state {} at generation {} (snapshot + {} journal records): {} policies, {} "
      "steering rules, {} local SIDs{}, {} paths down",
      state_path, out.generation, st.journal_records, out.config.policies.size(),
      out.config.steering.size(), out.config.local_sids.size(),
      out.extras.engine_params_from_agent ? ", engine parameters set over gRPC" : "",
      out.extras.paths_down.size());
  return out;
}

}  // namespace srv6gw::agent
