// SPDX-License-Identifier: BSD-3-Clause
// srv6gw-ctl: the operator's command line over the gateway's gRPC API (srv6gw.v1). Tables by
// default, --json for scripts. A refused call prints the server's message and exits 1; a
// usage error exits 2. The command line is CLI11's (--help on every command, errors name the
// option); what each command does is below its options.
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "agent/client_channel.hpp"
#include "grpc/health/v1/health.grpc.pb.h"
#include "srv6gw/v1/srv6gw.grpc.pb.h"

namespace {

namespace v1 = srv6gw::v1;
using google::protobuf::Message;

constexpr const char* kDefaultSocket = "/run/srv6gw/agent.sock";
constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;

// Connection and output options, taken before or after the command.
struct Cli {
  std::string socket;
  std::string target;
  std::string ca, cert, key, server_name;
  bool insecure = false;
  bool json = false;
  double timeout_s = 60;
};

// The options of every command (only those of the command given are set).
struct Args {
  std::string file;  // apply -f
  bool dry_run = false;
  std::optional<uint64_t> expected_generation;
  std::optional<uint32_t> page_size;
  std::string policy;                 // list steering --policy; show policy NAME; path POLICY
  std::string action;                 // path down|up
  std::string segment_list;           // path ... SEGMENT-LIST
  std::optional<uint32_t> path_id;    // path ... --path-id
  uint64_t count = 0;                 // watch --count
  std::vector<std::string> kinds;     // watch --kind
  std::vector<std::string> settings;  // engine set KEY=VALUE...
  std::string service;                // health --service
};

// A mistake found after parsing (a combination CLI11 cannot express): exit 2 like CLI11's.
[[noreturn]] void usage_error(const std::string& msg) {
  std::cerr << "srv6gw-ctl: " << msg << "\nRun with --help for more information.\n";
  std::exit(kExitUsage);
}

std::string read_file(const std::string& path) {
  std::ostringstream buf;
  if (path == "-") {
    buf << std::cin.rdbuf();
    return buf.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "srv6gw-ctl: cannot read " << path << "\n";
    std::exit(kExitFailed);
  }
  buf << in.rdbuf();
  return buf.str();
}

std::shared_ptr<grpc::Channel> connect(const Cli& c, std::string& where) {
  where = c.socket.empty() ? c.target : "unix:" + c.socket;
  srv6gw::agent::ChannelTarget t{where, c.ca, c.cert, c.key, c.server_name, c.insecure};
  std::string error;
  auto channel = srv6gw::agent::make_client_channel(t, grpc::ChannelArguments(), error);
  if (!channel) {
    std::cerr << "srv6gw-ctl: " << error << "\n";
    std::exit(kExitFailed);
  }
  return channel;
}

int fail(const grpc::Status& st, const std::string& where) {
  std::cerr << "srv6gw-ctl: " << srv6gw::agent::status_code_name(st.error_code()) << ": "
            << st.error_message();
  if (st.error_code() == grpc::StatusCode::UNAVAILABLE) std::cerr << " (" << where << ")";
  std::cerr << "\n";
  return kExitFailed;
}

std::string to_json(const Message& m, bool one_line = false) {
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = !one_line;
  o.always_print_primitive_fields = true;
  o.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  if (!one_line && (out.empty() || out.back() != '\n')) out += '\n';
  return out;
}

// A plain text table: columns padded to their widest cell.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  size_t size() const { return rows_.size() - 1; }
  void print(std::ostream& out) const {
    std::vector<size_t> w;
    for (const auto& r : rows_) {
      for (size_t i = 0; i < r.size(); ++i) {
        if (w.size() <= i) w.push_back(0);
        w[i] = std::max(w[i], r[i].size());
      }
    }
    for (const auto& r : rows_) {
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) {
        line += r[i];
        if (i + 1 < r.size()) line += std::string(w[i] - r[i].size() + 2, ' ');
      }
      out << line << "\n";
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string lower_enum(const std::string& name, const std::string& prefix) {
  std::string s = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
  for (char& ch : s) ch = ch == '_' ? '-' : char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string encap_text(const v1::SrPolicy& p) {
  std::string s = lower_enum(v1::EncapMode_Name(p.encap()), "ENCAP_MODE_");
  if (p.encap() == v1::ENCAP_MODE_USID) {
    s += " F" + std::to_string(p.usid_format().block_bits()) +
         std::to_string(p.usid_format().usid_bits());
  }
  return s;
}

// The rails a policy applies on (policy/rails): "all" when it names none.
std::string rails_text(const v1::SrPolicy& p) {
  if (p.rails_size() == 0) return "all";
  std::string out;
  for (const auto& r : p.rails()) out += (out.empty() ? "" : ",") + r;
  return out;
}

std::string selection_text(const v1::SrPolicy& p) {
  const auto& sel = p.selection();
  std::string s = lower_enum(v1::SelectionMode_Name(sel.mode()), "SELECTION_MODE_");
  if (sel.mode() == v1::SELECTION_MODE_FLOWLET) {
    s += " gap " + std::to_string(sel.flowlet_gap_us()) + "us";
  }
  if (sel.mode() == v1::SELECTION_MODE_BALANCED) {
    s += " idle-gap " + std::to_string(sel.idle_gap_us()) + "us";
  }
  if (sel.spray_opcodes_size() > 0) {
    s += " spray";
    for (uint32_t op : sel.spray_opcodes()) s += " " + std::to_string(op);
  }
  return s;
}

std::string match_text(const v1::SteeringRule& r) {
  switch (r.match_case()) {
    case v1::SteeringRule::kExact:
      return "exact " + r.exact().destination() + " qp " + std::to_string(r.exact().dest_qp());
    case v1::SteeringRule::kDestination:
      return "destination " + r.destination();
    case v1::SteeringRule::kQpRange: {
      std::string s = "qp " + std::to_string(r.qp_range().qp_low()) + "-" +
                      std::to_string(r.qp_range().qp_high());
      if (!r.qp_range().destination().empty()) s += " of " + r.qp_range().destination();
      return s;
    }
    case v1::SteeringRule::kPrefix:
      return "prefix " + r.prefix();
    default:
      return "?";
  }
}

struct Ctx {
  Cli cli;
  Args args;
  std::string where;
  std::unique_ptr<v1::Gateway::Stub> stub;
  std::shared_ptr<grpc::Channel> channel;

  void deadline(grpc::ClientContext& ctx) const {
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::milliseconds(int64_t(cli.timeout_s * 1000)));
  }
};

int cmd_apply(Ctx& c) {
  const Args& a = c.args;
  if (a.file.empty()) usage_error("apply needs -f FILE (or -f - for stdin)");
  v1::ApplyRequest req;
  google::protobuf::util::JsonParseOptions po;
  po.ignore_unknown_fields = false;
  auto parsed = google::protobuf::util::JsonStringToMessage(read_file(a.file), &req, po);
  if (!parsed.ok()) {
    std::cerr << "srv6gw-ctl: " << a.file << ": not a changes file: " << parsed.message() << "\n";
    return kExitFailed;
  }
  if (a.dry_run) req.set_dry_run(true);
  if (a.expected_generation) req.set_expected_generation(*a.expected_generation);
  grpc::ClientContext ctx;
  c.deadline(ctx);
  v1::ApplyResponse resp;
  auto st = c.stub->Apply(&ctx, req, &resp);
  if (!st.ok()) return fail(st, c.where);
  if (c.cli.json) {
    std::cout << to_json(resp);
    return kExitOk;
  }
  const auto& n = resp.counts();
  std::cout << (resp.dry_run() ? "dry run: would apply" : "applied") << " " << req.changes_size()
            << " changes" << (resp.dry_run() ? " at" : ": now at") << " generation "
            << resp.generation() << "\n"
            << "  policies    +" << n.policies_upserted() << " -" << n.policies_deleted() << "\n"
            << "  steering    +" << n.steering_upserted() << " -" << n.steering_deleted() << "\n"
            << "  local SIDs  +" << n.local_sids_upserted() << " -" << n.local_sids_deleted()
            << "\n";
  if (n.rails_upserted()) std::cout << "  rails       ~" << n.rails_upserted() << "\n";
  return kExitOk;
}

int list_policies(Ctx& c) {
  v1::ListPoliciesRequest req;
  if (c.args.page_size) req.set_page_size(*c.args.page_size);
  v1::ListPoliciesResponse all;
  // A RAILS column only when some policy is scoped to rails (the table is unchanged else).
  std::vector<std::vector<std::string>> rows;
  bool scoped = false;
  for (;;) {
    grpc::ClientContext ctx;
    c.deadline(ctx);
    v1::ListPoliciesResponse resp;
    auto st = c.stub->ListPolicies(&ctx, req, &resp);
    if (!st.ok()) return fail(st, c.where);
    for (const auto& p : resp.policies()) {
      std::string lists;
      for (const auto& sl : p.segment_lists()) {
        if (!lists.empty()) lists += ", ";
        lists += sl.name() + " (" + std::to_string(sl.path_id()) + ", w" +
                 std::to_string(sl.weight()) + (sl.backup() ? ", backup" : "") + ")";
      }
      rows.push_back({p.name(), std::to_string(p.color()),
                      p.endpoint().empty() ? "-" : p.endpoint(), encap_text(p), selection_text(p),
                      rails_text(p), lists});
      scoped |= p.rails_size() > 0;
    }
    all.mutable_policies()->MergeFrom(resp.policies());
    all.set_generation(resp.generation());
    all.set_total(resp.total());
    if (resp.next_page_token().empty()) break;
    req.set_page_token(resp.next_page_token());
  }
  if (c.cli.json) {
    std::cout << to_json(all);
  } else {
    std::vector<std::string> header = {"NAME",      "COLOR", "ENDPOINT",     "ENCAP",
                                       "SELECTION", "RAILS", "SEGMENT-LISTS"};
    if (!scoped) header.erase(header.begin() + 5);
    Table t(header);
    for (auto& row : rows) {
      if (!scoped) row.erase(row.begin() + 5);
      t.add(row);
    }
    t.print(std::cout);
    std::cout << t.size() << " policies at generation " << all.generation() << "\n";
  }
  return kExitOk;
}

int list_steering(Ctx& c) {
  v1::ListSteeringRequest req;
  if (c.args.page_size) req.set_page_size(*c.args.page_size);
  if (!c.args.policy.empty()) req.set_policy(c.args.policy);
  v1::ListSteeringResponse all;
  uint64_t count = 0, generation = 0;
  bool header = true;
  for (;;) {
    grpc::ClientContext ctx;
    c.deadline(ctx);
    v1::ListSteeringResponse resp;
    auto st = c.stub->ListSteering(&ctx, req, &resp);
    if (!st.ok()) return fail(st, c.where);
    generation = resp.generation();
    count += uint64_t(resp.rules_size());
    if (c.cli.json) {
      all.mutable_rules()->MergeFrom(resp.rules());
      all.set_generation(resp.generation());
      all.set_total(resp.total());
    } else {
      // Page by page: a million rules should not wait for the last page to show.
      Table t({"ID", "MATCH", "DSCP", "POLICY"});
      for (const auto& r : resp.rules()) {
        t.add({std::to_string(r.id()), match_text(r),
               r.has_dscp() ? std::to_string(r.dscp()) : "any", r.policy()});
      }
      if (!header) {
        std::ostringstream buf;
        t.print(buf);
        std::string text = buf.str();
        std::cout << text.substr(text.find('\n') + 1);
      } else {
        t.print(std::cout);
      }
      header = false;
    }
    if (resp.next_page_token().empty()) break;
    req.set_page_token(resp.next_page_token());
  }
  if (c.cli.json) {
    std::cout << to_json(all);
  } else {
    std::cout << count << " steering rules at generation " << generation << "\n";
  }
  return kExitOk;
}

int list_local_sids(Ctx& c) {
  v1::ListLocalSidsRequest req;
  if (c.args.page_size) req.set_page_size(*c.args.page_size);
  v1::ListLocalSidsResponse all;
  Table t({"SID", "BEHAVIOR"});
  for (;;) {
    grpc::ClientContext ctx;
    c.deadline(ctx);
    v1::ListLocalSidsResponse resp;
    auto st = c.stub->ListLocalSids(&ctx, req, &resp);
    if (!st.ok()) return fail(st, c.where);
    for (const auto& l : resp.local_sids()) {
      t.add({l.sid(), lower_enum(v1::LocalSidBehavior_Name(l.behavior()), "LOCAL_SID_BEHAVIOR_")});
    }
    all.mutable_local_sids()->MergeFrom(resp.local_sids());
    all.set_generation(resp.generation());
    all.set_total(resp.total());
    if (resp.next_page_token().empty()) break;
    req.set_page_token(resp.next_page_token());
  }
  if (c.cli.json) {
    std::cout << to_json(all);
  } else {
    t.print(std::cout);
    std::cout << t.size() << " local SIDs at generation " << all.generation() << "\n";
  }
  return kExitOk;
}

int cmd_show_policy(Ctx& c) {
  grpc::ClientContext ctx;
  c.deadline(ctx);
  v1::GetPolicyRequest req;
  req.set_name(c.args.policy);
  v1::SrPolicy p;
  auto st = c.stub->GetPolicy(&ctx, req, &p);
  if (!st.ok()) return fail(st, c.where);
  if (c.cli.json) {
    std::cout << to_json(p);
    return kExitOk;
  }
  std::cout << "policy " << p.name() << "\n"
            << "  color      " << p.color() << "\n"
            << "  endpoint   " << (p.endpoint().empty() ? "-" : p.endpoint()) << "\n"
            << "  source     " << (p.source_address().empty() ? "(gateway)" : p.source_address())
            << "\n"
            << "  encap      " << encap_text(p) << "\n"
            << "  selection  " << selection_text(p) << "\n"
            << "  rails      " << rails_text(p) << "\n";
  Table t({"  SEGMENT-LIST", "PATH-ID", "WEIGHT", "ROLE", "SIDS"});
  for (const auto& sl : p.segment_lists()) {
    std::string sids;
    for (const auto& sid : sl.sids()) sids += (sids.empty() ? "" : " ") + sid;
    t.add({"  " + sl.name(), std::to_string(sl.path_id()), std::to_string(sl.weight()),
           sl.backup() ? "backup" : "primary", sids});
  }
  t.print(std::cout);
  return kExitOk;
}

int cmd_state(Ctx& c) {
  grpc::ClientContext ctx;
  c.deadline(ctx);
  v1::GetStateResponse st;
  auto s = c.stub->GetState(&ctx, {}, &st);
  if (!s.ok()) return fail(s, c.where);
  if (c.cli.json) {
    std::cout << to_json(st);
    return kExitOk;
  }
  std::cout << "generation     " << st.generation() << "\n"
            << "policies       " << st.policies() << "\n"
            << "steering rules " << st.steering_rules() << "\n"
            << "local SIDs     " << st.local_sids() << "\n"
            << "state file     " << (st.state_file().empty() ? "(not persisted)" : st.state_file())
            << "\n";
  if (st.rails_size() == 0) return kExitOk;  // a single pair: one implicit rail
  Table t({"RAIL", "HOST", "FABRIC", "QUEUES", "SOURCE", "VLAN", "MTU H/F", "LOCAL SIDS"});
  for (const v1::Rail& r : st.rails()) {
    std::string sids;
    for (const auto& ls : r.local_sids()) sids += (sids.empty() ? "" : " ") + ls.sid();
    auto mtu = [](uint32_t m) { return m ? std::to_string(m) : std::string("-"); };
    t.add({r.name(), r.host(), r.fabric(), std::to_string(r.queues()),
           r.source_address().empty() ? "(gateway)" : r.source_address(),
           r.has_fabric_vlan() ? std::to_string(r.fabric_vlan().id()) : "-",
           mtu(r.host_mtu()) + "/" + mtu(r.fabric_mtu()), sids.empty() ? "-" : sids});
  }
  std::cout << "\n";
  t.print(std::cout);
  return kExitOk;
}

// Probed paths only: state, counts, RTT and the traffic class the probes go out with.
void print_probe_table(const v1::Stats& s) {
  auto n = [](uint64_t v) { return std::to_string(v); };
  // With rails, one row per rail probing the path (RAIL column); a single pair as before.
  bool railed = false;
  for (const auto& p : s.policies())
    for (const auto& path : p.paths()) railed |= path.rail_probes_size() > 0;
  std::vector<std::string> header = {"POLICY", "SEGMENT-LIST", "PATH-ID",
                                     "PROBE",  "SENT",         "ANSWERED",
                                     "LOST",   "RTT-P99-US",   "TRAFFIC-CLASS"};
  if (railed) header.insert(header.begin() + 3, "RAIL");
  Table t(header);
  for (const auto& p : s.policies()) {
    for (const auto& path : p.paths()) {
      if (!path.has_probe()) continue;
      std::vector<const v1::ProbeStats*> probes;
      for (const auto& pr : path.rail_probes()) probes.push_back(&pr);
      if (probes.empty()) probes.push_back(&path.probe());
      for (const v1::ProbeStats* pr : probes) {
        char tc[48];
        std::snprintf(tc, sizeof tc, "0x%02x dscp %u (%s)", pr->traffic_class(),
                      pr->traffic_class() >> 2, pr->traffic_class_source().c_str());
        std::vector<std::string> row = {p.name(),
                                        path.segment_list(),
                                        n(path.path_id()),
                                        pr->state() == v1::PATH_STATE_DOWN ? "down" : "up",
                                        n(pr->sent()),
                                        n(pr->answered()),
                                        n(pr->lost()),
                                        n(pr->rtt_p99_ns() / 1000),
                                        tc};
        if (railed) row.insert(row.begin() + 3, pr->rail().empty() ? "-" : pr->rail());
        t.add(row);
      }
    }
  }
  if (t.size() == 0) return;
  t.print(std::cout);
  std::cout << "\n";
}

int cmd_stats(Ctx& c) {
  grpc::ClientContext ctx;
  c.deadline(ctx);
  v1::Stats s;
  auto st = c.stub->GetStats(&ctx, {}, &s);
  if (!st.ok()) return fail(st, c.where);
  if (c.cli.json) {
    std::cout << to_json(s);
    return kExitOk;
  }
  auto n = [](uint64_t v) { return std::to_string(v); };
  std::cout << "generation " << s.generation() << "\n\n";
  // A gateway with rails names them: a RAIL column and a table of per-rail totals. A single
  // pair (its one implicit rail "0") prints as it always did.
  bool named_rails = false;
  for (const auto& p : s.ports()) named_rails |= !p.rail().empty() && p.rail() != "0";
  auto with_rail = [named_rails](const std::string& rail, std::vector<std::string> row) {
    if (named_rails) row.insert(row.begin(), rail);
    return row;
  };
  if (s.ports_size() > 0) {
    Table t(with_rail("RAIL", {"PORT", "NAME", "RX-PKTS", "RX-BYTES", "TX-PKTS", "TX-BYTES",
                               "MISSED", "RX-ERR", "TX-ERR", "NO-MBUF"}));
    for (const auto& p : s.ports()) {
      t.add(with_rail(p.rail(), {p.role(), p.name(), n(p.rx_packets()), n(p.rx_bytes()),
                                 n(p.tx_packets()), n(p.tx_bytes()), n(p.rx_missed()),
                                 n(p.rx_errors()), n(p.tx_errors()), n(p.rx_nombuf())}));
    }
    t.print(std::cout);
    std::cout << "\n";
  }
  {
    Table t(with_rail("RAIL",
                      {"WORKER", "RX-HOST", "RX-FABRIC", "TX-HOST", "TX-FABRIC", "ENCAP", "DECAP",
                       "PASS-H2F", "PASS-F2H", "CNP", "OUTER-CE", "CE-MARKED", "DROPS"}));
    // Per rail, in order of first appearance: encap, decap, drops.
    std::vector<std::pair<std::string, std::array<uint64_t, 3>>> rails;
    for (const auto& w : s.workers()) {
      uint64_t drops = 0;
      for (const auto& d : w.drops()) drops += d.value();
      t.add(with_rail(
          w.rail(),
          {n(w.index()), n(w.rx_host()), n(w.rx_fabric()), n(w.tx_host()), n(w.tx_fabric()),
           n(w.encap()), n(w.decap()), n(w.passed_host_to_fabric()), n(w.passed_fabric_to_host()),
           n(w.cnp_seen()), n(w.outer_ce_seen()), n(w.inner_ce_marked()), n(drops)}));
      auto it = std::find_if(rails.begin(), rails.end(),
                             [&](const auto& r) { return r.first == w.rail(); });
      if (it == rails.end())
        it = rails.insert(rails.end(),
                          std::pair<std::string, std::array<uint64_t, 3>>{w.rail(), {}});
      it->second[0] += w.encap();
      it->second[1] += w.decap();
      it->second[2] += drops;
    }
    t.print(std::cout);
    uint64_t overflow = 0;
    for (const auto& w : s.workers()) overflow += w.balanced_overflow();
    if (overflow != 0) std::cout << "balanced overflow (placed by hash) " << overflow << "\n";
    std::cout << "\n";
    if (named_rails) {
      Table r({"RAIL", "ENCAP", "DECAP", "DROPS"});
      for (const auto& [name, c] : rails) r.add({name, n(c[0]), n(c[1]), n(c[2])});
      r.print(std::cout);
      std::cout << "\n";
    }
  }
  if (s.policies_size() > 0) {
    Table t({"POLICY", "SEGMENT-LIST", "PATH-ID", "WEIGHT", "FACTOR", "PACKETS", "BYTES",
             "ACTIVE-FLOWS", "LOAD-GROUP"});
    for (const auto& p : s.policies()) {
      for (const auto& path : p.paths()) {
        char factor[32];
        std::snprintf(factor, sizeof factor, "%.3g", path.factor());
        t.add({p.name(), path.segment_list(), n(path.path_id()), n(path.weight()), factor,
               n(path.packets()), n(path.bytes()),
               path.load_group().empty() ? "-" : n(path.active_flows()),
               path.load_group().empty() ? "-" : path.load_group()});
      }
    }
    t.print(std::cout);
    std::cout << "\n";
    print_probe_table(s);
  }
  Table t({"DROP-REASON", "PACKETS"});
  for (const auto& d : s.drops()) {
    if (d.value() != 0) t.add({d.name(), n(d.value())});
  }
  if (t.size() == 0) {
    std::cout << "no drops\n";
  } else {
    t.print(std::cout);
  }
  return kExitOk;
}

std::string event_line(const v1::Event& e) {
  const std::time_t secs = std::time_t(e.time_unix_ns() / 1000000000u);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[16];
  std::snprintf(frac, sizeof frac, ".%06uZ", unsigned(e.time_unix_ns() / 1000u % 1000000u));
  std::string s = std::string(when) + frac + " gen " + std::to_string(e.generation()) + " " +
                  lower_enum(v1::EventKind_Name(e.kind()), "EVENT_KIND_");
  if (e.has_config_applied()) {
    const auto& n = e.config_applied().counts();
    s += " policies +" + std::to_string(n.policies_upserted()) + " -" +
         std::to_string(n.policies_deleted()) + " steering +" +
         std::to_string(n.steering_upserted()) + " -" + std::to_string(n.steering_deleted()) +
         " local-sids +" + std::to_string(n.local_sids_upserted()) + " -" +
         std::to_string(n.local_sids_deleted()) +
         (e.config_applied().engine_params() ? " engine-params" : "") + " from " +
         e.config_applied().origin();
  } else if (e.has_path()) {
    const auto& p = e.path();
    char f[64];
    std::snprintf(f, sizeof f, "factor %.3g -> %.3g", p.old_factor(), p.new_factor());
    s += " " + p.policy() + "/" + p.segment_list() + " (path " + std::to_string(p.path_id()) +
         ") " + f + " " + lower_enum(v1::PathState_Name(p.old_state()), "PATH_STATE_") + " -> " +
         lower_enum(v1::PathState_Name(p.new_state()), "PATH_STATE_");
    if (!p.reason().empty()) s += ": " + p.reason();
  } else if (e.kind() == v1::EVENT_KIND_EVENTS_LOST) {
    s += " " + std::to_string(e.lost()) + " events lost (this watcher fell behind)";
  } else if (e.has_pause_storm()) {
    const auto& st = e.pause_storm();
    s += " " + st.port() + " port " + st.device() +
         (st.active() ? " egress blocked: port unusable, refused frames dropped"
                      : " egress takes frames again") +
         " (storms " + std::to_string(st.storms()) + ", pause_storm drops " +
         std::to_string(st.dropped()) + ")";
  }
  return s;
}

// "config-applied" -> EVENT_KIND_CONFIG_APPLIED; nullopt for no kind a watcher can ask for.
std::optional<v1::EventKind> parse_event_kind(const std::string& text) {
  std::string name = "EVENT_KIND_" + text;
  for (char& ch : name) ch = ch == '-' ? '_' : char(std::toupper(static_cast<unsigned char>(ch)));
  v1::EventKind k;
  if (!v1::EventKind_Parse(name, &k) || k == v1::EVENT_KIND_UNSPECIFIED) return std::nullopt;
  return k;
}

int cmd_watch(Ctx& c) {
  const uint64_t count = c.args.count;
  v1::WatchEventsRequest req;
  for (const std::string& kind : c.args.kinds) req.add_kinds(*parse_event_kind(kind));
  grpc::ClientContext ctx;
  auto reader = c.stub->WatchEvents(&ctx, req);
  v1::Event e;
  uint64_t seen = 0;
  while (reader->Read(&e)) {
    std::cout << (c.cli.json ? to_json(e, true) : event_line(e)) << std::endl;
    if (e.kind() != v1::EVENT_KIND_SUBSCRIBED && count != 0 && ++seen >= count) {
      ctx.TryCancel();
      reader->Finish();
      return kExitOk;
    }
  }
  auto st = reader->Finish();
  return st.ok() ? kExitOk : fail(st, c.where);
}

int cmd_path(Ctx& c) {
  const Args& a = c.args;
  if (a.path_id.has_value() == !a.segment_list.empty())
    usage_error("path down|up POLICY SEGMENT-LIST, or path down|up POLICY --path-id N");
  v1::SetPathStateRequest req;
  req.set_up(a.action == "up");
  req.set_policy(a.policy);
  if (a.path_id)
    req.set_path_id(*a.path_id);
  else
    req.set_segment_list(a.segment_list);
  grpc::ClientContext ctx;
  c.deadline(ctx);
  v1::SetPathStateResponse resp;
  auto st = c.stub->SetPathState(&ctx, req, &resp);
  if (!st.ok()) return fail(st, c.where);
  if (c.cli.json) {
    std::cout << to_json(resp);
    return kExitOk;
  }
  char factor[32];
  std::snprintf(factor, sizeof factor, "%.3g", resp.factor());
  std::cout << req.policy() << "/" << resp.segment_list() << " (path " << resp.path_id() << ") "
            << a.action << (resp.changed() ? "" : " (unchanged)") << ", factor " << factor << "\n";
  return kExitOk;
}

// EngineParams field <-> YANG leaf name (interval_us <-> interval-us).
std::string leaf_name(std::string field) {
  std::replace(field.begin(), field.end(), '_', '-');
  return field;
}

std::string field_text(const Message& m, const google::protobuf::FieldDescriptor* f) {
  const auto* r = m.GetReflection();
  switch (f->cpp_type()) {
    case google::protobuf::FieldDescriptor::CPPTYPE_BOOL:
      return r->GetBool(m, f) ? "true" : "false";
    case google::protobuf::FieldDescriptor::CPPTYPE_UINT32:
      return std::to_string(r->GetUInt32(m, f));
    case google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE: {
      char b[32];
      std::snprintf(b, sizeof b, "%.6g", r->GetDouble(m, f));
      return b;
    }
    default:
      return "?";
  }
}

void print_engine_params(const v1::EngineParams& p) {
  Table t({"parameter", "value"});
  const auto* d = v1::EngineParams::descriptor();
  for (int i = 0; i < d->field_count(); ++i)
    t.add({leaf_name(d->field(i)->name()), field_text(p, d->field(i))});
  t.print(std::cout);
}

// KEY=VALUE with KEY a leaf of the YANG container engine (or its proto field name).
void set_engine_field(v1::EngineParams& p, const std::string& arg) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0) usage_error("engine set KEY=VALUE, not '" + arg + "'");
  std::string key = arg.substr(0, eq);
  const std::string value = arg.substr(eq + 1);
  std::replace(key.begin(), key.end(), '-', '_');
  const auto* f = v1::EngineParams::descriptor()->FindFieldByName(key);
  if (!f) usage_error("unknown engine parameter '" + arg.substr(0, eq) + "'");
  const auto* r = p.GetReflection();
  switch (f->cpp_type()) {
    case google::protobuf::FieldDescriptor::CPPTYPE_BOOL:
      if (value != "true" && value != "false")
        usage_error(leaf_name(key) + " must be true or false, not '" + value + "'");
      r->SetBool(&p, f, value == "true");
      break;
    case google::protobuf::FieldDescriptor::CPPTYPE_UINT32: {
      uint32_t v = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (value.empty() || ec != std::errc() || end != value.data() + value.size())
        usage_error(leaf_name(key) + " must be a number, not '" + value + "'");
      r->SetUInt32(&p, f, v);
      break;
    }
    case google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE: {
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);
      if (value.empty() || end != value.c_str() + value.size())
        usage_error(leaf_name(key) + " must be a number, not '" + value + "'");
      r->SetDouble(&p, f, v);
      break;
    }
    default:
      usage_error("engine parameter '" + leaf_name(key) + "' has an unexpected type");
  }
}

int cmd_engine_show(Ctx& c) {
  grpc::ClientContext ctx;
  c.deadline(ctx);
  v1::GetEngineParamsResponse resp;
  auto st = c.stub->GetEngineParams(&ctx, {}, &resp);
  if (!st.ok()) return fail(st, c.where);
  if (c.cli.json) {
    std::cout << to_json(resp);
    return kExitOk;
  }
  print_engine_params(resp.params());
  std::cout << "(generation " << resp.generation() << ", "
            << (resp.set_by_agent() ? "set over gRPC" : "from the configuration file") << ")\n";
  return kExitOk;
}

int cmd_engine_set(Ctx& c) {
  v1::SetEngineParamsRequest req;
  for (const std::string& kv : c.args.settings) set_engine_field(*req.mutable_params(), kv);
  req.set_dry_run(c.args.dry_run);
  if (c.args.expected_generation) req.set_expected_generation(*c.args.expected_generation);
  grpc::ClientContext ctx;
  c.deadline(ctx);
  v1::SetEngineParamsResponse resp;
  auto st = c.stub->SetEngineParams(&ctx, req, &resp);
  if (!st.ok()) return fail(st, c.where);
  if (c.cli.json) {
    std::cout << to_json(resp);
    return kExitOk;
  }
  std::cout << (resp.dry_run()   ? "dry run: would apply"
                : resp.changed() ? "applied"
                                 : "unchanged")
            << ", generation " << resp.generation() << "\n";
  print_engine_params(resp.params());
  return kExitOk;
}

int cmd_health(Ctx& c) {
  auto health = grpc::health::v1::Health::NewStub(c.channel);
  grpc::ClientContext ctx;
  c.deadline(ctx);
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(c.args.service);
  grpc::health::v1::HealthCheckResponse resp;
  auto st = health->Check(&ctx, req, &resp);
  if (!st.ok()) return fail(st, c.where);
  const std::string status =
      grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status());
  if (c.cli.json) {
    std::cout << to_json(resp);
  } else {
    std::cout << status << "\n";
  }
  return resp.status() == grpc::health::v1::HealthCheckResponse::SERVING ? kExitOk : kExitFailed;
}

// The command line: connection and output options, then one command (nested for list, show
// and engine). Each command's callback stays empty: main runs the command it finds chosen.
struct CommandLine {
  CLI::App app{"srv6gw-ctl: the operator's command line over the gateway's gRPC API (srv6gw.v1)",
               "srv6gw-ctl"};
  std::vector<std::pair<CLI::App*, int (*)(Ctx&)>> commands;

  CommandLine(Cli& cli, Args& a) {
    app.require_subcommand(1);
    app.fallthrough();  // connection options also after the command, as scripts write them
    app.footer(
        "Exit: 0 done, 1 the call failed (the server's message is printed), 2 bad command "
        "line.\nEach command has its own --help (srv6gw-ctl apply --help).");
    const std::string conn = "Connection (default: --socket /run/srv6gw/agent.sock)";
    auto* socket = app.add_option("--socket", cli.socket, "the gateway's unix socket")->group(conn);
    auto* target = app.add_option("--target", cli.target,
                                  "HOST:PORT over TCP: with --ca (TLS) "
                                  "or --insecure (plain TCP)")
                       ->group(conn)
                       ->excludes(socket);
    app.add_option("--ca", cli.ca, "CA certificate of the agent (TLS)")->group(conn)->needs(target);
    auto* cert = app.add_option("--cert", cli.cert, "client certificate (mutual TLS, with --key)")
                     ->group(conn)
                     ->needs(target);
    auto* key = app.add_option("--key", cli.key, "client private key (mutual TLS, with --cert)")
                    ->group(conn)
                    ->needs(target)
                    ->needs(cert);
    cert->needs(key);
    app.add_option("--tls-server-name", cli.server_name,
                   "name to check the agent's certificate against (default: the host of "
                   "--target)")
        ->group(conn);
    app.add_flag("--insecure", cli.insecure, "plain TCP, no TLS")->group(conn)->needs(target);
    app.add_option("--timeout", cli.timeout_s, "seconds per call (default 60)")->group(conn);
    app.add_flag("--json", cli.json, "JSON (protobuf's mapping) instead of tables");

    auto* apply =
        add("apply", "apply a batch of changes atomically (docs/design/agent.md)", cmd_apply);
    apply->add_option("-f,--file", a.file, "JSON changes file (ApplyRequest), - for stdin")
        ->type_name("FILE");
    add_write_options(apply, a);

    auto* list = app.add_subcommand("list", "list policies, steering rules or local SIDs");
    list->require_subcommand(1);
    list->fallthrough();
    auto* policies = add(list, "policies", "SR policies and their segment lists", list_policies);
    auto* steering = add(list, "steering", "steering rules (page by page)", list_steering);
    steering->add_option("--policy", a.policy, "only the rules of this policy");
    auto* local_sids = add(list, "local-sids", "local SIDs and their behaviors", list_local_sids);
    for (CLI::App* l : {policies, steering, local_sids})
      l->add_option("--page-size", a.page_size, "entries per call (server default if unset)");

    auto* show = app.add_subcommand("show", "one object in full");
    show->require_subcommand(1);
    show->fallthrough();
    add(show, "policy", "a policy, its segment lists and SIDs", cmd_show_policy)
        ->add_option("name", a.policy, "policy name")
        ->required();

    add("state", "running generation and table sizes", cmd_state);
    add("stats", "ports, workers, policies and paths, drops by reason", cmd_stats);

    auto* watch = add("watch", "stream events", cmd_watch);
    watch->add_option("--count", a.count, "exit after N events (the subscribed line aside)");
    watch
        ->add_option("--kind", a.kinds,
                     "only events of this kind (repeatable): config-applied, path-weight, "
                     "path-state, pause-storm")
        ->check(CLI::Validator(
            [](std::string& kind) {
              return parse_event_kind(kind) ? std::string() : "unknown event kind '" + kind + "'";
            },
            "KIND"));

    auto* path = add("path",
                     "take a path out of service in the local SR engine (down), or put it back "
                     "at full weight (up)",
                     cmd_path);
    path->add_option("action", a.action, "down or up")
        ->required()
        ->check(CLI::IsMember({"down", "up"}));
    path->add_option("policy", a.policy, "policy name")->required();
    path->add_option("segment-list", a.segment_list, "segment list name (or --path-id)");
    path->add_option("--path-id", a.path_id, "the segment list by its path id");

    auto* engine = app.add_subcommand("engine", "the local SR engine's parameters");
    engine->require_subcommand(1);
    engine->fallthrough();
    add(engine, "show", "parameters in force", cmd_engine_show);
    auto* set = add(engine, "set", "change parameters live", cmd_engine_set);
    set->add_option("settings", a.settings,
                    "KEY=VALUE..., KEY a leaf of the YANG container engine (alpha=0.5 "
                    "hold-down-us=2000 reflect=false)")
        ->required();
    add_write_options(set, a);

    add("health", "grpc.health.v1 check", cmd_health)
        ->add_option("--service", a.service, "service name (default: the server as a whole)");
    // "srv6gw-ctl help" as well as --help.
    app.add_subcommand("help", "this text")->silent()->parse_complete_callback([] {
      throw CLI::CallForHelp();
    });
  }

  CLI::App* add(const std::string& name, const std::string& what, int (*run)(Ctx&)) {
    return add(&app, name, what, run);
  }
  CLI::App* add(CLI::App* parent, const std::string& name, const std::string& what,
                int (*run)(Ctx&)) {
    CLI::App* cmd = parent->add_subcommand(name, what);
    cmd->fallthrough();
    commands.emplace_back(cmd, run);
    return cmd;
  }
  static void add_write_options(CLI::App* cmd, Args& a) {
    cmd->add_flag("--dry-run", a.dry_run, "validate only: nothing changes");
    cmd->add_option("--expected-generation", a.expected_generation,
                    "refuse unless the running generation is N (optimistic locking)");
  }

  // The command chosen, or exit: 0 after --help, 2 after a usage error.
  int (*parse(int argc, char** argv))(Ctx&) {
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
      std::fputs(chosen_help().c_str(), stdout);
      std::exit(kExitOk);
    } catch (const CLI::ParseError& e) {
      // A word that is no command leaves CLI11 saying only that a command is missing.
      const auto extra = app.remaining();
      if (app.get_subcommands().empty() && !extra.empty())
        usage_error("unknown command '" + extra.front() + "'");
      usage_error(e.what());
    }
    for (const auto& [cmd, run] : commands) {
      if (cmd->parsed()) return run;
    }
    usage_error("no command");
  }

  // The help of the deepest command given ("srv6gw-ctl list steering --help").
  std::string chosen_help() const {
    const CLI::App* at = &app;
    std::string prefix;
    while (!at->get_subcommands().empty() && at->get_subcommands().front()->get_name() != "help") {
      prefix += (prefix.empty() ? "" : " ") + at->get_name();
      at = at->get_subcommands().front();
    }
    return at->help(prefix);
  }
};

}  // namespace

int main(int argc, char** argv) {
  Ctx c;
  CommandLine command_line(c.cli, c.args);
  int (*run)(Ctx&) = command_line.parse(argc, argv);
  if (c.cli.socket.empty() && c.cli.target.empty()) c.cli.socket = kDefaultSocket;
  if (!c.cli.target.empty() && c.cli.ca.empty() && !c.cli.insecure)
    usage_error("--target needs --ca (TLS) or --insecure (plain TCP)");
  c.channel = connect(c.cli, c.where);
  c.stub = v1::Gateway::NewStub(c.channel);
  return run(c);
}
