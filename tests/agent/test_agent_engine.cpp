// SPDX-License-Identifier: BSD-3-Clause
// The local SR engine over gRPC, in-process against a fake data plane: GetEngineParams /
// SetEngineParams (validation naming the field, dry run, generations, persistence, restore
// precedence over the configuration file, the CONFIG_APPLIED event) and the persistence of
// SetPathState downs (state-file section, restore, pruning by Apply, rollback when the
// state cannot be written).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "agent/agent.hpp"
#include "agent/persist.hpp"
#include "agent_test_util.hpp"

namespace srv6gw::agent::test {
namespace {

// base_config() plus a policy "duo" with lists a (path 11) and b (path 12).
config::GatewayConfig two_path_config() {
  config::GatewayConfig cfg = base_config();
  config::Policy p;
  p.name = "duo";
  for (auto [name, id] : {std::pair{"a", 11}, std::pair{"b", 12}}) {
    config::SegmentList sl;
    sl.name = name;
    sl.path_id = uint16_t(id);
    sl.sids = {v6("fc00:0:101::e")};
    p.segment_lists.push_back(sl);
  }
  cfg.policies.push_back(p);
  return cfg;
}

// Plays the daemon's SetPathState handler: knows the paths of the running configuration,
// records the commands and the resulting admin state by path id.
struct FakeEngine {
  std::mutex mutex;
  std::map<uint16_t, bool> down;
  std::vector<PathStateCommand> commands;
  const config::GatewayConfig* cfg = nullptr;

  PathStateOutcome handle(const PathStateCommand& cmd) {
    std::lock_guard lock(mutex);
    commands.push_back(cmd);
    PathStateOutcome out;
    for (const config::Policy& p : cfg->policies) {
      if (p.name != cmd.policy) continue;
      for (const config::SegmentList& sl : p.segment_lists) {
        if (cmd.segment_list ? sl.name != *cmd.segment_list : sl.path_id != *cmd.path_id) continue;
        const bool was_down = down[sl.path_id];
        down[sl.path_id] = !cmd.up;
        out.status = PathStateOutcome::Status::ok;
        out.segment_list = sl.name;
        out.path_id = sl.path_id;
        out.changed = was_down == cmd.up;
        out.factor = cmd.up ? 1.0 : 0.0;
        return out;
      }
    }
    out.status = PathStateOutcome::Status::not_found;
    return out;
  }
};

class AgentEngine : public ::testing::Test {
 protected:
  std::unique_ptr<Agent> start(const config::GatewayConfig& cfg, uint64_t generation,
                               const StateExtras& extras = {}) {
    sink.running = cfg;
    options.listen = "unix:" + dir.file("agent.sock");
    options.state_path = dir.file("state.json");
    std::string err;
    auto a = Agent::start(options, sink, cfg, generation, err, extras);
    EXPECT_TRUE(a) << err;
    if (a) stub = unix_stub(a->address());
    return a;
  }

  grpc::Status set(const v1::SetEngineParamsRequest& req, v1::SetEngineParamsResponse& resp) {
    grpc::ClientContext ctx;
    return stub->SetEngineParams(&ctx, req, &resp);
  }

  v1::GetEngineParamsResponse get() {
    grpc::ClientContext ctx;
    v1::GetEngineParamsResponse resp;
    EXPECT_TRUE(stub->GetEngineParams(&ctx, {}, &resp).ok());
    return resp;
  }

  grpc::Status path(const std::string& policy, const std::string& list, bool up,
                    v1::SetPathStateResponse* out = nullptr) {
    v1::SetPathStateRequest req;
    req.set_policy(policy);
    req.set_segment_list(list);
    req.set_up(up);
    grpc::ClientContext ctx;
    v1::SetPathStateResponse resp;
    auto st = stub->SetPathState(&ctx, req, &resp);
    if (out) *out = resp;
    return st;
  }

  TempDir dir;
  FakeSink sink;
  AgentOptions options;
  std::unique_ptr<v1::Gateway::Stub> stub;
};

TEST_F(AgentEngine, GetReturnsTheRunningParameters) {
  config::GatewayConfig cfg = base_config();
  cfg.engine.alpha = 0.5;
  cfg.engine.reflect = false;
  auto a = start(cfg, 3);
  ASSERT_TRUE(a);
  const auto r = get();
  EXPECT_EQ(r.generation(), 3u);
  EXPECT_FALSE(r.set_by_agent());
  EXPECT_DOUBLE_EQ(r.params().alpha(), 0.5);
  EXPECT_FALSE(r.params().reflect());
  EXPECT_TRUE(r.params().has_enabled());  // every field present in an answer
  EXPECT_EQ(r.params().interval_us(), 100u);
  EXPECT_EQ(r.params().hold_down_us(), 5000u);
}

TEST_F(AgentEngine, SetChangesOnlyTheGivenFieldsAndIsAppliedPersistedAndStreamed) {
  auto a = start(base_config(), 0);
  ASSERT_TRUE(a);
  grpc::ClientContext watch_ctx;
  v1::WatchEventsRequest wreq;
  wreq.add_kinds(v1::EVENT_KIND_CONFIG_APPLIED);
  auto reader = stub->WatchEvents(&watch_ctx, wreq);
  v1::Event ev;
  ASSERT_TRUE(reader->Read(&ev));
  ASSERT_EQ(ev.kind(), v1::EVENT_KIND_SUBSCRIBED);

  v1::SetEngineParamsRequest req;
  req.mutable_params()->set_alpha(0.5);
  req.mutable_params()->set_hold_down_us(2000);
  req.mutable_params()->set_reflect(false);
  req.mutable_params()->set_decrease(0.3333333333);  // rounded to YANG's 6 digits
  v1::SetEngineParamsResponse resp;
  auto st = set(req, resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_TRUE(resp.changed());
  EXPECT_EQ(resp.generation(), 1u);
  EXPECT_DOUBLE_EQ(resp.params().alpha(), 0.5);
  EXPECT_DOUBLE_EQ(resp.params().decrease(), 0.333333);
  EXPECT_EQ(resp.params().hold_down_us(), 2000u);
  EXPECT_EQ(resp.params().interval_us(), 100u);  // untouched

  // In force in the data plane (the daemon's engine reads the running configuration).
  EXPECT_DOUBLE_EQ(sink.running.engine.alpha, 0.5);
  EXPECT_EQ(sink.running.engine.hold_down_us, 2000u);
  EXPECT_FALSE(sink.running.engine.reflect);
  EXPECT_EQ(sink.running.engine.interval_us, 100u);
  EXPECT_EQ(a->generation(), 1u);
  EXPECT_EQ(a->state()->config.engine, sink.running.engine);
  EXPECT_TRUE(get().set_by_agent());

  ASSERT_TRUE(reader->Read(&ev));
  EXPECT_EQ(ev.kind(), v1::EVENT_KIND_CONFIG_APPLIED);
  EXPECT_EQ(ev.generation(), 1u);
  EXPECT_TRUE(ev.config_applied().engine_params());
  watch_ctx.TryCancel();
  reader->Finish();

  // Persisted: the file says so and holds the values.
  auto read = read_state_file(options.state_path);
  ASSERT_TRUE(std::holds_alternative<PersistedState>(read)) << std::get<std::string>(read);
  const auto& ps = std::get<PersistedState>(read);
  EXPECT_EQ(ps.generation, 1u);
  EXPECT_TRUE(ps.extras.engine_params_from_agent);
  EXPECT_EQ(ps.config.engine, sink.running.engine);

  // The same values again: nothing to do, no new generation.
  const unsigned calls = sink.apply_calls;
  ASSERT_TRUE(set(req, resp).ok());
  EXPECT_FALSE(resp.changed());
  EXPECT_EQ(resp.generation(), 1u);
  EXPECT_EQ(sink.apply_calls, calls);
}

TEST_F(AgentEngine, InvalidValuesAreRefusedNamingTheFieldAndChangeNothing) {
  auto a = start(base_config(), 0);
  ASSERT_TRUE(a);
  v1::SetEngineParamsRequest ok;
  ok.mutable_params()->set_alpha(0.5);
  v1::SetEngineParamsResponse resp;
  ASSERT_TRUE(set(ok, resp).ok());
  const std::string file_before = slurp(options.state_path);
  const engine::Params running = sink.running.engine;
  const unsigned calls = sink.apply_calls;

  struct Case {
    const char* what;
    std::function<void(v1::EngineParams&)> edit;
    const char* field;  // expected "params.<field>"
    const char* yang;   // expected YANG node
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<Case> cases = {
      {"alpha 0", [](auto& p) { p.set_alpha(0); }, "params.alpha", "/srv6gw:gateway/engine/alpha"},
      {"alpha > 1", [](auto& p) { p.set_alpha(1.5); }, "params.alpha", "engine/alpha"},
      {"alpha NaN", [&](auto& p) { p.set_alpha(nan); }, "params.alpha", "engine/alpha"},
      {"decrease 1", [](auto& p) { p.set_decrease(1.0); }, "params.decrease", "engine/decrease"},
      {"interval 0", [](auto& p) { p.set_interval_us(0); }, "params.interval_us",
       "engine/interval-us"},
      {"readmit >= exclude",
       [](auto& p) {
         p.set_exclude_threshold(2);
         p.set_readmit_threshold(2);
       },
       "params.readmit_threshold", "engine/readmit-threshold"},
      {"readmit-factor < min-factor",
       [](auto& p) {
         p.set_min_factor(0.5);
         p.set_readmit_factor(0.25);
       },
       "params.readmit_factor", "engine/readmit-factor"},
      {"max hold-down < hold-down", [](auto& p) { p.set_hold_down_us(400000); },
       "params.max_hold_down_us", "engine/max-hold-down-us"},
      {"recovery-period 0", [](auto& p) { p.set_recovery_period_us(0); },
       "params.recovery_period_us", "engine/recovery-period-us"},
      {"recovery-step rounds to 0", [](auto& p) { p.set_recovery_step(1e-9); },
       "params.recovery_step", "engine/recovery-step"},
  };
  for (const Case& c : cases) {
    v1::SetEngineParamsRequest req;
    c.edit(*req.mutable_params());
    const auto st = set(req, resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.what;
    EXPECT_EQ(st.error_message().rfind(c.field, 0), 0u) << c.what << ": " << st.error_message();
    EXPECT_NE(st.error_message().find(c.yang), std::string::npos)
        << c.what << ": " << st.error_message();
  }
  EXPECT_EQ(a->generation(), 1u);
  EXPECT_EQ(sink.running.engine, running);
  EXPECT_EQ(sink.apply_calls, calls);
  EXPECT_EQ(slurp(options.state_path), file_before);

  // The data plane's refusal also changes nothing.
  sink.refuse_next = config::ConfigError{"/srv6gw:gateway/engine/interval-us", "test refusal"};
  v1::SetEngineParamsRequest req;
  req.mutable_params()->set_interval_us(200);
  const auto st = set(req, resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("params.interval_us: test refusal"), std::string::npos)
      << st.error_message();
  EXPECT_EQ(a->generation(), 1u);
  EXPECT_EQ(a->state()->config.engine, running);
  EXPECT_EQ(slurp(options.state_path), file_before);
}

TEST_F(AgentEngine, DryRunAndStaleGeneration) {
  auto a = start(base_config(), 5);
  ASSERT_TRUE(a);
  v1::SetEngineParamsRequest req;
  req.mutable_params()->set_exclude_threshold(8);
  req.set_dry_run(true);
  v1::SetEngineParamsResponse resp;
  ASSERT_TRUE(set(req, resp).ok());
  EXPECT_TRUE(resp.dry_run());
  EXPECT_TRUE(resp.changed());
  EXPECT_DOUBLE_EQ(resp.params().exclude_threshold(), 8);
  EXPECT_EQ(resp.generation(), 5u);
  EXPECT_EQ(sink.apply_calls, 0u);
  EXPECT_FALSE(std::filesystem::exists(options.state_path));

  req.set_dry_run(false);
  req.set_expected_generation(4);
  EXPECT_EQ(set(req, resp).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  req.set_expected_generation(5);
  ASSERT_TRUE(set(req, resp).ok());
  EXPECT_EQ(resp.generation(), 6u);
  EXPECT_DOUBLE_EQ(sink.running.engine.exclude_threshold, 8);
}

TEST_F(AgentEngine, RestartKeepsParametersSetOverGrpcOverTheConfigurationFile) {
  {
    auto a = start(base_config(), 0);
    ASSERT_TRUE(a);
    // An Apply alone does not make the engine container the agent's.
    v1::ApplyRequest apply;
    *apply.add_changes()->mutable_upsert_steering() = exact_rule(1, "10.0.0.1", 1, "base");
    grpc::ClientContext ctx;
    v1::ApplyResponse ar;
    ASSERT_TRUE(stub->Apply(&ctx, apply, &ar).ok());
  }
  config::GatewayConfig file = base_config();
  file.engine.hold_down_us = 7000;  // the operator edited the file meanwhile
  auto st = restore_startup_state(options.state_path, file);
  ASSERT_TRUE(st.restored);
  EXPECT_EQ(st.config.engine.hold_down_us, 7000u);
  EXPECT_FALSE(st.extras.engine_params_from_agent);

  {
    auto a = start(st.config, st.generation, st.extras);
    ASSERT_TRUE(a);
    v1::SetEngineParamsRequest req;
    req.mutable_params()->set_alpha(0.75);
    v1::SetEngineParamsResponse resp;
    ASSERT_TRUE(set(req, resp).ok());
    EXPECT_EQ(resp.generation(), 2u);
  }
  st = restore_startup_state(options.state_path, file);
  ASSERT_TRUE(st.restored);
  EXPECT_TRUE(st.extras.engine_params_from_agent);
  EXPECT_DOUBLE_EQ(st.config.engine.alpha, 0.75);
  EXPECT_EQ(st.config.engine.hold_down_us, 7000u);
  EXPECT_EQ(st.generation, 2u);
  // ... and an Apply after the restart keeps them the agent's.
  {
    auto a = start(st.config, st.generation, st.extras);
    ASSERT_TRUE(a);
    EXPECT_TRUE(get().set_by_agent());
    v1::ApplyRequest apply;
    *apply.add_changes()->mutable_upsert_steering() = exact_rule(2, "10.0.0.2", 2, "base");
    grpc::ClientContext ctx;
    v1::ApplyResponse ar;
    ASSERT_TRUE(stub->Apply(&ctx, apply, &ar).ok());
  }
  file.engine.alpha = 0.125;
  st = restore_startup_state(options.state_path, file);
  EXPECT_DOUBLE_EQ(st.config.engine.alpha, 0.75);
  EXPECT_EQ(st.config.steering.size(), 2u);
}

TEST_F(AgentEngine, PathDownIsPersistedRestoredAndForgottenWhenUpOrRemoved) {
  const config::GatewayConfig cfg = two_path_config();
  FakeEngine eng;
  eng.cfg = &cfg;
  auto a = start(cfg, 0);
  ASSERT_TRUE(a);
  a->set_path_state_handler([&](const PathStateCommand& c) { return eng.handle(c); });

  v1::SetPathStateResponse resp;
  ASSERT_TRUE(path("duo", "b", false, &resp).ok());
  EXPECT_TRUE(resp.changed());
  EXPECT_EQ(resp.path_id(), 12u);
  const std::string text = slurp(options.state_path);
  EXPECT_NE(text.find("\"paths-down\""), std::string::npos) << text;
  auto read = read_state_file(options.state_path);
  ASSERT_TRUE(std::holds_alternative<PersistedState>(read)) << std::get<std::string>(read);
  EXPECT_EQ(std::get<PersistedState>(read).generation, 0u);  // not a configuration change
  EXPECT_EQ(std::get<PersistedState>(read).extras.paths_down,
            (std::vector<PathDown>{{"duo", "b", 12}}));

  // Restart: the down path comes back in the startup state and is carried on.
  a.reset();
  auto st = restore_startup_state(options.state_path, cfg);
  ASSERT_TRUE(st.restored);
  EXPECT_EQ(st.extras.paths_down, (std::vector<PathDown>{{"duo", "b", 12}}));
  a = start(st.config, st.generation, st.extras);
  ASSERT_TRUE(a);
  a->set_path_state_handler([&](const PathStateCommand& c) { return eng.handle(c); });
  ASSERT_TRUE(path("duo", "a", false).ok());
  st = restore_startup_state(options.state_path, cfg);
  EXPECT_EQ(st.extras.paths_down, (std::vector<PathDown>{{"duo", "b", 12}, {"duo", "a", 11}}));

  // Up forgets it.
  ASSERT_TRUE(path("duo", "b", true).ok());
  st = restore_startup_state(options.state_path, cfg);
  EXPECT_EQ(st.extras.paths_down, (std::vector<PathDown>{{"duo", "a", 11}}));

  // An Apply that removes the path's policy forgets it too.
  v1::ApplyRequest apply;
  apply.add_changes()->set_delete_policy("duo");
  grpc::ClientContext ctx;
  v1::ApplyResponse ar;
  ASSERT_TRUE(stub->Apply(&ctx, apply, &ar).ok());
  st = restore_startup_state(options.state_path, cfg);
  EXPECT_TRUE(st.extras.paths_down.empty());
  EXPECT_EQ(st.generation, 1u);
}

TEST_F(AgentEngine, PathDownThatCannotBePersistedIsPutBack) {
  const config::GatewayConfig cfg = two_path_config();
  FakeEngine eng;
  eng.cfg = &cfg;
  const std::string sub = dir.file("sub");
  std::filesystem::create_directory(sub);
  sink.running = cfg;
  options.listen = "unix:" + dir.file("agent.sock");
  options.state_path = sub + "/state.json";
  std::string err;
  auto a = Agent::start(options, sink, cfg, 0, err);
  ASSERT_TRUE(a) << err;
  stub = unix_stub(a->address());
  a->set_path_state_handler([&](const PathStateCommand& c) { return eng.handle(c); });
  std::filesystem::remove_all(sub);
  { std::ofstream(sub) << "now a file"; }
  const auto st = path("duo", "a", false);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(st.error_message().find("put back"), std::string::npos) << st.error_message();
  std::lock_guard lock(eng.mutex);
  ASSERT_EQ(eng.commands.size(), 2u);  // down, then the undo by path id
  EXPECT_TRUE(eng.commands[1].up);
  EXPECT_EQ(eng.commands[1].path_id, std::optional<uint16_t>(11));
  EXPECT_FALSE(eng.down[11]);
}

TEST_F(AgentEngine, StateFileExtrasAreCheckedWhenRead) {
  options.state_path = dir.file("state.json");
  ASSERT_EQ(write_state_file(options.state_path, two_path_config(), 4), "");
  const std::string good = slurp(options.state_path);
  ASSERT_FALSE(good.empty());
  const auto insert = [&](const std::string& member) {
    std::string t = good;
    t.insert(t.rfind('}'), ",\n  " + member + "\n");
    std::ofstream(options.state_path) << t;
    return read_state_file(options.state_path);
  };
  auto r =
      insert("\"paths-down\": [{\"policy\": \"duo\", \"segment-list\": \"a\", \"path-id\": 11}]");
  ASSERT_TRUE(std::holds_alternative<PersistedState>(r)) << std::get<std::string>(r);
  EXPECT_EQ(std::get<PersistedState>(r).extras.paths_down,
            (std::vector<PathDown>{{"duo", "a", 11}}));
  for (const char* bad :
       {"\"paths-down\": {\"policy\": \"duo\"}", "\"paths-down\": [{\"policy\": \"duo\"}]",
        "\"paths-down\": [{\"policy\": \"duo\", \"segment-list\": \"a\", \"path-id\": 70000}]",
        "\"engine-params-from-agent\": 1"}) {
    r = insert(bad);
    ASSERT_TRUE(std::holds_alternative<std::string>(r)) << bad;
    EXPECT_NE(std::get<std::string>(r).find(bad[1] == 'p' ? "paths-down" : "engine-params"),
              std::string::npos)
        << std::get<std::string>(r);
  }
  // A path id the configuration no longer has is dropped at restore.
  insert("\"paths-down\": [{\"policy\": \"gone\", \"segment-list\": \"x\", \"path-id\": 99}]");
  const auto st = restore_startup_state(options.state_path, two_path_config());
  EXPECT_TRUE(st.restored);
  EXPECT_TRUE(st.extras.paths_down.empty());
}

// Apply edits a spare copy of an older state in place; SetEngineParams replaces the whole
// state. Applies on either side of it must neither revert the parameters nor lose rules.
TEST_F(AgentEngine, AppliesAroundSetEngineParamsKeepBoth) {
  auto a = start(base_config(), 0);
  ASSERT_TRUE(a);
  auto apply_rule = [&](uint32_t id, const char* dst) {
    v1::ApplyRequest apply;
    *apply.add_changes()->mutable_upsert_steering() = exact_rule(id, dst, id, "base");
    grpc::ClientContext ctx;
    v1::ApplyResponse ar;
    ASSERT_TRUE(stub->Apply(&ctx, apply, &ar).ok());
  };
  apply_rule(1, "10.0.0.1");
  apply_rule(2, "10.0.0.2");  // from here on the agent keeps a spare state
  v1::SetEngineParamsRequest req;
  req.mutable_params()->set_alpha(0.75);
  v1::SetEngineParamsResponse resp;
  ASSERT_TRUE(set(req, resp).ok());
  apply_rule(3, "10.0.0.3");
  apply_rule(4, "10.0.0.4");
  apply_rule(5, "10.0.0.5");
  EXPECT_DOUBLE_EQ(get().params().alpha(), 0.75);
  EXPECT_DOUBLE_EQ(sink.running.engine.alpha, 0.75);
  EXPECT_EQ(sink.running.steering.size(), 5u);
  const auto st = restore_startup_state(options.state_path, base_config());
  ASSERT_TRUE(st.restored);
  EXPECT_DOUBLE_EQ(st.config.engine.alpha, 0.75);
  EXPECT_EQ(st.config.steering.size(), 5u);
}

}  // namespace
}  // namespace srv6gw::agent::test
