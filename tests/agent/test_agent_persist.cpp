// SPDX-License-Identifier: BSD-3-Clause
// Persistence: a restarted agent comes back with what was applied, at the same generation;
// an unusable state file is set aside (never silently reused nor lost) and the daemon starts
// from its configuration file; a state that cannot be written is rolled back.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "agent/agent.hpp"
#include "agent/convert.hpp"
#include "agent/persist.hpp"
#include "agent_test_util.hpp"
#include "config/loader.hpp"

namespace srv6gw::agent::test {
namespace {

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class AgentPersist : public ::testing::Test {
 protected:
  std::unique_ptr<Agent> start(const config::GatewayConfig& cfg, uint64_t generation) {
    sink.running = cfg;
    options.listen = "unix:" + dir.file("agent.sock");
    options.state_path = dir.file("state.json");
    std::string err;
    auto a = Agent::start(options, sink, cfg, generation, err);
    EXPECT_TRUE(a) << err;
    return a;
  }

  // Applies two batches (generation 2): a policy, rules, a local SID, then a delete.
  void populate(Agent& a) {
    auto stub = unix_stub(a.address());
    v1::ApplyRequest r1;
    *r1.add_changes()->mutable_upsert_policy() = make_policy("p1", 100);
    *r1.add_changes()->mutable_upsert_steering() = exact_rule(1, "10.0.0.1", 1, "p1");
    *r1.add_changes()->mutable_upsert_steering() = exact_rule(2, "fd00::2", 2, "base");
    r1.add_changes()->mutable_upsert_local_sid()->set_sid("fc00:0:1::d4");
    v1::ApplyRequest r2;
    r2.add_changes()->set_delete_steering(2);
    for (auto* r : {&r1, &r2}) {
      grpc::ClientContext ctx;
      v1::ApplyResponse resp;
      auto st = stub->Apply(&ctx, *r, &resp);
      ASSERT_TRUE(st.ok()) << st.error_message();
    }
  }

  TempDir dir;
  FakeSink sink;
  AgentOptions options;
};

TEST_F(AgentPersist, RestartRestoresStateAndGeneration) {
  auto a = start(base_config(), 0);
  ASSERT_TRUE(a);
  populate(*a);
  const config::GatewayConfig applied = a->state()->config;
  ASSERT_EQ(a->generation(), 2u);
  a->stop();
  a.reset();
  // Only the state file and its (empty: compacted at stop) journal are left: no temporary
  // file, no socket.
  EXPECT_EQ(files_in(dir.path()), (std::vector<std::string>{"state.json", "state.json.journal"}));

  // The file's config is a configuration instance of its own (libyang + validate).
  auto read = read_state_file(options.state_path);
  ASSERT_TRUE(std::holds_alternative<PersistedState>(read)) << std::get<std::string>(read);
  EXPECT_EQ(std::get<PersistedState>(read).generation, 2u);
  EXPECT_EQ(std::get<PersistedState>(read).journal_records, 0u);
  EXPECT_EQ(std::get<PersistedState>(read).config, applied);

  // Restart: ports, addresses, capacities come from the (possibly edited) configuration file;
  // policies, steering and local SIDs from the state.
  config::GatewayConfig file = base_config();
  file.hop_limit = 32;
  file.capacities.exact_entries = 1000;
  const auto st = restore_startup_state(options.state_path, file);
  EXPECT_TRUE(st.restored);
  EXPECT_EQ(st.generation, 2u);
  EXPECT_TRUE(st.set_aside.empty());
  EXPECT_EQ(st.config.hop_limit, 32);
  EXPECT_EQ(st.config.capacities.exact_entries, 1000u);
  EXPECT_EQ(st.config.policies, applied.policies);
  EXPECT_EQ(st.config.steering, applied.steering);
  EXPECT_EQ(st.config.local_sids, applied.local_sids);

  auto b = start(st.config, st.generation);
  ASSERT_TRUE(b);
  auto stub = unix_stub(b->address());
  grpc::ClientContext ctx;
  v1::GetStateResponse state;
  ASSERT_TRUE(stub->GetState(&ctx, {}, &state).ok());
  EXPECT_EQ(state.generation(), 2u);
  EXPECT_EQ(state.policies(), 2u);
  EXPECT_EQ(state.steering_rules(), 1u);
  EXPECT_EQ(state.local_sids(), 1u);
  // Generations continue from there; a controller's stale view is refused.
  v1::ApplyRequest req;
  req.set_expected_generation(0);
  *req.add_changes()->mutable_upsert_steering() = exact_rule(3, "10.0.0.3", 3, "p1");
  grpc::ClientContext c2;
  v1::ApplyResponse resp;
  EXPECT_EQ(stub->Apply(&c2, req, &resp).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  req.set_expected_generation(2);
  grpc::ClientContext c3;
  ASSERT_TRUE(stub->Apply(&c3, req, &resp).ok());
  EXPECT_EQ(resp.generation(), 3u);
}

TEST_F(AgentPersist, RailSettingsAppliedOverGrpcSurviveARestart) {
  const config::GatewayConfig file = two_rails_config();
  StartupState first;
  {
    // Without a rail change the file's rails win (an edited MAC is taken from the file).
    auto a = start(file, 0);
    ASSERT_TRUE(a);
    populate(*a);
    a->stop();
    config::GatewayConfig edited = file;
    edited.rails[1].host_mac = net::parse_mac("02:00:00:00:0e:0e");
    first = restore_startup_state(options.state_path, edited);
    ASSERT_TRUE(first.restored);
    EXPECT_FALSE(first.extras.rails_from_agent);
    EXPECT_EQ(first.config.rails, edited.rails);
  }
  auto a = start(first.config, first.generation);
  ASSERT_TRUE(a);
  auto stub = unix_stub(a->address());
  v1::Rail r1;
  to_proto(file.rails[1], r1);
  r1.set_host_mac("02:00:00:00:09:09");
  r1.mutable_fabric_vlan()->set_id(300);
  r1.mutable_local_sids(0)->set_sid("fc00:0:9::d47");
  v1::ApplyRequest req;
  *req.add_changes()->mutable_upsert_rail() = r1;
  // A policy scoped to rail r1 (policy/rails) keeps its scope through journal and state file.
  v1::SrPolicy scoped = make_policy("on-r1", 40, 1);
  scoped.add_rails("r1");
  *req.add_changes()->mutable_upsert_policy() = scoped;
  grpc::ClientContext ctx;
  v1::ApplyResponse resp;
  ASSERT_TRUE(stub->Apply(&ctx, req, &resp).ok());
  const config::GatewayConfig applied = a->state()->config;
  a->stop();
  a.reset();
  // The applied MACs, VLAN and SIDs win over the file's; ports, queues, source come from it.
  const auto st = restore_startup_state(options.state_path, file);
  ASSERT_TRUE(st.restored);
  EXPECT_TRUE(st.extras.rails_from_agent);
  EXPECT_EQ(st.config.rails, applied.rails);
  EXPECT_EQ(st.config.rails[1].fabric_port.vlan.id, 300);
  EXPECT_EQ(st.config.rails[1].local_sids.at(0).sid, v6("fc00:0:9::d47"));
  EXPECT_TRUE(st.config.rails[1].host_port.lossless.enabled);
  bool found = false;
  for (const config::Policy& p : st.config.policies)
    if (p.name == "on-r1") {
      found = true;
      EXPECT_EQ(p.rails, std::vector<std::string>{"r1"});
    }
  EXPECT_TRUE(found) << "policy on-r1 not restored";
}

TEST_F(AgentPersist, MissingFileStartsFromTheConfiguration) {
  const auto st = restore_startup_state(dir.file("state.json"), base_config());
  EXPECT_FALSE(st.restored);
  EXPECT_EQ(st.generation, 0u);
  EXPECT_EQ(st.config, base_config());
  EXPECT_TRUE(files_in(dir.path()).empty());
  // No persistence at all.
  const auto none = restore_startup_state("", base_config());
  EXPECT_FALSE(none.restored);
}

// A snapshot or journal killed mid-write leaves <file>.tmp-<pid>: removed at start when its
// writer is gone; a live writer's (here: this process's) is left alone.
TEST_F(AgentPersist, LeftoverTemporariesOfDeadWritersAreRemoved) {
  auto a = start(base_config(), 0);
  ASSERT_TRUE(a);
  populate(*a);
  a->stop();
  a.reset();
  // A pid that is surely gone: a child that has exited and been reaped.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  const std::string dead = std::to_string(child), self = std::to_string(::getpid());
  for (const std::string& f :
       {"state.json.tmp-" + dead, "state.json.journal.tmp-" + dead, "state.json.tmp-" + self,
        "other.json.tmp-" + dead, "state.json.tmp-x" + dead})
    std::ofstream(dir.file(f)) << "{\"half a snapshot";
  const auto st = restore_startup_state(options.state_path, base_config());
  EXPECT_TRUE(st.restored);
  EXPECT_EQ(st.generation, 2u);
  const auto files = files_in(dir.path());
  auto has = [&](const std::string& f) {
    return std::find(files.begin(), files.end(), f) != files.end();
  };
  EXPECT_FALSE(has("state.json.tmp-" + dead));
  EXPECT_FALSE(has("state.json.journal.tmp-" + dead));
  EXPECT_TRUE(has("state.json.tmp-" + self));   // a live writer
  EXPECT_TRUE(has("other.json.tmp-" + dead));   // not this state file's
  EXPECT_TRUE(has("state.json.tmp-x" + dead));  // not a pid
}

// Every way a state file can be unusable ends the same way: set aside with its content
// intact, start from the configuration file at generation 0.
TEST_F(AgentPersist, CorruptFilesAreSetAside) {
  // A valid file to mutilate.
  {
    auto a = start(base_config(), 0);
    ASSERT_TRUE(a);
    populate(*a);
  }
  const std::string good = slurp(options.state_path);
  ASSERT_FALSE(good.empty());
  std::string wrong_format = good;
  wrong_format.replace(wrong_format.find("srv6gw-agent-state/2"), 20, "srv6gw-agent-state/9");
  std::string bad_generation = good;
  bad_generation.replace(bad_generation.find("\"generation\": 2"), 15, "\"generation\": -2");
  std::string bad_yang = good;
  bad_yang.replace(bad_yang.find("\"hop-limit\":64"), 14,
                   "\"hop-limit\":640");  // config is compact
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"garbage", "\x01\x02 not json at all"},
      {"empty", ""},
      {"truncated", good.substr(0, good.size() / 2)},
      {"trailing garbage", good + "}"},
      {"wrong format tag", wrong_format},
      {"bad generation", bad_generation},
      {"libyang refuses the config", bad_yang},
      {"not an object", "[1, 2, 3]"},
  };
  for (const auto& [what, content] : cases) {
    SCOPED_TRACE(what);
    TempDir d;
    const std::string path = d.file("state.json");
    { std::ofstream(path, std::ios::binary) << content; }
    const auto st = restore_startup_state(path, base_config());
    EXPECT_FALSE(st.restored);
    EXPECT_EQ(st.generation, 0u);
    EXPECT_EQ(st.config, base_config());
    EXPECT_FALSE(std::filesystem::exists(path));
    ASSERT_FALSE(st.set_aside.empty());
    EXPECT_EQ(st.set_aside.rfind(path + ".corrupt-", 0), 0u) << st.set_aside;
    EXPECT_EQ(slurp(st.set_aside), content);
    EXPECT_EQ(files_in(d.path()).size(), 1u);
  }
}

TEST_F(AgentPersist, StateThatNoLongerFitsTheConfigurationIsSetAside) {
  {
    auto a = start(base_config(), 0);
    ASSERT_TRUE(a);
    populate(*a);
  }
  config::GatewayConfig smaller = base_config();
  smaller.capacities.policies = 1;  // the state holds two
  const auto st = restore_startup_state(options.state_path, smaller);
  EXPECT_FALSE(st.restored);
  EXPECT_EQ(st.generation, 0u);
  EXPECT_EQ(st.config, smaller);
  EXPECT_EQ(st.set_aside.rfind(options.state_path + ".rejected-", 0), 0u) << st.set_aside;
  EXPECT_FALSE(std::filesystem::exists(options.state_path));
}

TEST_F(AgentPersist, UnwritableStateRollsBack) {
  const std::string sub = dir.file("sub");
  std::filesystem::create_directory(sub);
  sink.running = base_config();
  AgentOptions o;
  o.listen = "unix:" + dir.file("agent.sock");
  o.state_path = sub + "/state.json";
  std::string err;
  auto a = Agent::start(o, sink, base_config(), 0, err);
  ASSERT_TRUE(a) << err;
  auto stub = unix_stub(a->address());
  v1::ApplyRequest req;
  *req.add_changes()->mutable_upsert_steering() = exact_rule(1, "10.0.0.1", 1, "base");
  {
    grpc::ClientContext ctx;
    v1::ApplyResponse resp;
    ASSERT_TRUE(stub->Apply(&ctx, req, &resp).ok());
  }
  const config::GatewayConfig before = a->state()->config;
  // The state directory disappears (a full or read-only disk behaves alike: write fails).
  std::filesystem::remove_all(sub);
  { std::ofstream(sub) << "now a file"; }
  *req.mutable_changes(0)->mutable_upsert_steering() = exact_rule(2, "10.0.0.2", 2, "base");
  grpc::ClientContext ctx;
  v1::ApplyResponse resp;
  const auto st = stub->Apply(&ctx, req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(st.error_message().find("rolled back"), std::string::npos) << st.error_message();
  EXPECT_EQ(a->generation(), 1u);
  EXPECT_EQ(a->state()->config, before);
  EXPECT_EQ(sink.running, before);  // the data plane went back too
  EXPECT_EQ(sink.apply_calls, 3u);  // apply, apply, roll back
}

TEST_F(AgentPersist, StartRefusesAStateDirectoryItCannotWrite) {
  { std::ofstream(dir.file("file")) << "x"; }
  AgentOptions o;
  o.listen = "unix:" + dir.file("agent.sock");
  o.state_path = dir.file("file") + "/state.json";
  std::string err;
  EXPECT_FALSE(Agent::start(o, sink, base_config(), 0, err));
  EXPECT_NE(err.find("state"), std::string::npos) << err;
}

}  // namespace
}  // namespace srv6gw::agent::test
