// SPDX-License-Identifier: BSD-3-Clause
// The agent's commit step without gRPC: StateKeeper's Apply, engine parameters and path
// state each go validate -> run -> persist or undo -> publish -> event, and a refusal at any
// step leaves the published state, the data plane, the state file and the event stream as
// they were.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

#include "agent/state_keeper.hpp"
#include "agent_test_util.hpp"

namespace srv6gw::agent::test {
namespace {

using namespace std::chrono_literals;

class StateKeeperTest : public ::testing::Test {
 protected:
  StateKeeperTest() { sink.running = base_config(); }

  // A keeper persisting to DIR/sub/state.json (break_state_directory() makes it unwritable).
  std::unique_ptr<StateKeeper> make_keeper(const StateExtras& extras = {}) {
    std::filesystem::create_directory(sub());
    return std::make_unique<StateKeeper>(state_path(), sink, bus, base_config(), 0, extras);
  }
  std::string sub() const { return dir.file("sub"); }
  std::string state_path() const { return sub() + "/state.json"; }
  // A full or read-only disk behaves alike: the write fails.
  void break_state_directory() {
    std::filesystem::remove_all(sub());
    std::ofstream(sub()) << "now a file";
  }
  PersistedState persisted() {
    auto r = read_state_file(state_path());
    if (auto* why = std::get_if<std::string>(&r)) ADD_FAILURE() << *why;
    return std::get_if<PersistedState>(&r) ? std::get<PersistedState>(r) : PersistedState{};
  }
  // The events published since the subscription (after its `subscribed` event).
  std::vector<Event> events_so_far() {
    std::vector<Event> out;
    while (auto e = events->next(50ms))
      if (e->kind != EventKind::subscribed) out.push_back(*e);
    return out;
  }

  static google::protobuf::RepeatedPtrField<v1::Change> one_rule(uint32_t id) {
    google::protobuf::RepeatedPtrField<v1::Change> changes;
    *changes.Add()->mutable_upsert_steering() = exact_rule(id, ipv4_from(id), id, "base");
    return changes;
  }

  TempDir dir;
  FakeSink sink;
  EventBus bus;
  std::unique_ptr<EventBus::Subscription> events = bus.subscribe();
};

TEST_F(StateKeeperTest, ApplyRunsPersistsPublishesAndAnnounces) {
  auto keeper = make_keeper();
  ApplyResult r;
  ASSERT_FALSE(keeper->apply(one_rule(1), std::nullopt, false, "ctl", r));
  EXPECT_EQ(r.generation, 1u);
  EXPECT_EQ(r.counts.steering_upserted, 1u);
  EXPECT_EQ(keeper->snapshot()->generation, 1u);
  ASSERT_EQ(keeper->snapshot()->config.steering.size(), 1u);
  EXPECT_EQ(sink.running, keeper->snapshot()->config);
  const PersistedState file = persisted();
  EXPECT_EQ(file.generation, 1u);
  EXPECT_EQ(file.config.steering, keeper->snapshot()->config.steering);
  const auto ev = events_so_far();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, EventKind::config_applied);
  EXPECT_EQ(ev[0].generation, 1u);
  const auto& applied = std::get<ConfigAppliedEvent>(ev[0].detail);
  EXPECT_EQ(applied.origin, "ctl");
  EXPECT_EQ(applied.counts.steering_upserted, 1u);
}

TEST_F(StateKeeperTest, DryRunAndRefusalsChangeNothing) {
  auto keeper = make_keeper();
  ApplyResult r;
  ASSERT_FALSE(keeper->apply(one_rule(1), std::nullopt, true, "ctl", r));
  EXPECT_EQ(r.generation, 0u);

  auto stale = keeper->apply(one_rule(1), 5, false, "ctl", r);
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->code, Refusal::Code::failed_precondition);
  EXPECT_NE(stale->message.find("stale generation"), std::string::npos) << stale->message;

  google::protobuf::RepeatedPtrField<v1::Change> del;
  del.Add()->set_delete_steering(42);
  auto missing = keeper->apply(del, std::nullopt, false, "ctl", r);
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->code, Refusal::Code::not_found);

  sink.refuse_next = config::ConfigError{"/srv6gw:gateway/steering", "no room"};
  auto dp = keeper->apply(one_rule(1), std::nullopt, false, "ctl", r);
  ASSERT_TRUE(dp);
  EXPECT_EQ(dp->code, Refusal::Code::invalid_argument);
  EXPECT_NE(dp->message.find("data plane refused"), std::string::npos) << dp->message;

  EXPECT_EQ(sink.apply_calls, 1u);  // only the refused one reached the data plane
  EXPECT_EQ(keeper->snapshot()->generation, 0u);
  EXPECT_EQ(keeper->snapshot()->config, base_config());
  EXPECT_FALSE(std::filesystem::exists(state_path()));
  EXPECT_TRUE(events_so_far().empty());

  // The refused batch left no trace: the same batch applies afterwards.
  ASSERT_FALSE(keeper->apply(one_rule(1), 0, false, "ctl", r));
  EXPECT_EQ(r.generation, 1u);
}

TEST_F(StateKeeperTest, ApplyThatCannotBePersistedIsRolledBack) {
  auto keeper = make_keeper();
  ApplyResult r;
  ASSERT_FALSE(keeper->apply(one_rule(1), std::nullopt, false, "ctl", r));
  events_so_far();
  const config::GatewayConfig before = keeper->snapshot()->config;
  break_state_directory();
  auto refusal = keeper->apply(one_rule(2), std::nullopt, false, "ctl", r);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->code, Refusal::Code::unavailable);
  EXPECT_NE(refusal->message.find("rolled back"), std::string::npos) << refusal->message;
  EXPECT_EQ(keeper->snapshot()->generation, 1u);
  EXPECT_EQ(keeper->snapshot()->config, before);
  EXPECT_EQ(sink.running, before);  // the data plane went back too
  EXPECT_EQ(sink.apply_calls, 3u);  // apply, apply, roll back
  EXPECT_TRUE(events_so_far().empty());
}

TEST_F(StateKeeperTest, EngineParamsGoThroughTheSameStep) {
  auto keeper = make_keeper();
  EngineParamsResult r;
  const auto set_alpha = [](double alpha) {
    return [alpha](engine::Params& p) {
      p.alpha = alpha;
      return std::string();
    };
  };
  // Dry run: validated, nothing runs.
  ASSERT_FALSE(keeper->set_engine_params(set_alpha(0.5), std::nullopt, true, "ctl", r));
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.generation, 0u);
  EXPECT_EQ(sink.apply_calls, 0u);
  // The edit's own refusal, then config::validate()'s, named after the field.
  auto bad = keeper->set_engine_params([](engine::Params&) { return std::string("params.x: no"); },
                                       std::nullopt, false, "ctl", r);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->message, "params.x: no");
  auto invalid = keeper->set_engine_params(set_alpha(7), std::nullopt, false, "ctl", r);
  ASSERT_TRUE(invalid);
  EXPECT_EQ(invalid->code, Refusal::Code::invalid_argument);
  EXPECT_EQ(invalid->message.rfind("params.alpha: ", 0), 0u) << invalid->message;

  ASSERT_FALSE(keeper->set_engine_params(set_alpha(0.5), 0, false, "ctl", r));
  EXPECT_EQ(r.generation, 1u);
  EXPECT_EQ(keeper->snapshot()->config.engine.alpha, 0.5);
  EXPECT_EQ(sink.running.engine.alpha, 0.5);
  EXPECT_TRUE(keeper->engine_params_from_agent());
  const PersistedState file = persisted();
  EXPECT_EQ(file.generation, 1u);
  EXPECT_TRUE(file.extras.engine_params_from_agent);
  const auto ev = events_so_far();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_TRUE(std::get<ConfigAppliedEvent>(ev[0].detail).engine_params);
  EXPECT_EQ(ev[0].generation, 1u);

  // Unchanged parameters: answered, no new generation.
  ASSERT_FALSE(keeper->set_engine_params(set_alpha(0.5), std::nullopt, false, "ctl", r));
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(r.generation, 1u);

  // An Apply after it edits the new state, not an older copy (the parameters stay).
  ApplyResult ar;
  ASSERT_FALSE(keeper->apply(one_rule(1), std::nullopt, false, "ctl", ar));
  EXPECT_EQ(keeper->snapshot()->config.engine.alpha, 0.5);

  break_state_directory();
  auto refusal = keeper->set_engine_params(set_alpha(0.75), std::nullopt, false, "ctl", r);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->code, Refusal::Code::unavailable);
  EXPECT_NE(refusal->message.find("rolled back"), std::string::npos) << refusal->message;
  EXPECT_EQ(keeper->snapshot()->config.engine.alpha, 0.5);
  EXPECT_EQ(sink.running.engine.alpha, 0.5);
  EXPECT_EQ(keeper->snapshot()->generation, 2u);
}

// The configuration file's value, set over gRPC while no parameters were set there: answered
// "unchanged" at the running generation, and the parameters stay the configuration file's
// (tests/integration/test_persist_crash.py models an engine set this way).
TEST_F(StateKeeperTest, EngineParamsEqualToTheConfigurationFilesChangeNothing) {
  auto keeper = make_keeper();
  const double configured = keeper->snapshot()->config.engine.alpha;
  EngineParamsResult r;
  ASSERT_FALSE(keeper->set_engine_params(
      [configured](engine::Params& p) {
        p.alpha = configured;
        return std::string();
      },
      0, false, "ctl", r));
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(r.generation, 0u);
  EXPECT_EQ(keeper->snapshot()->generation, 0u);
  EXPECT_FALSE(keeper->engine_params_from_agent());
  EXPECT_EQ(sink.apply_calls, 0u);
  EXPECT_TRUE(events_so_far().empty());
  EXPECT_EQ(keeper->persist_counts().records + keeper->persist_counts().snapshots, 0u);
}

// The engine side of SetPathState: path "only" (id 1) of policy "base".
struct FakeEngine {
  std::vector<PathStateCommand> commands;
  bool down = false;
  PathStateOutcome handle(const PathStateCommand& c) {
    commands.push_back(c);
    PathStateOutcome out;
    if (c.policy != "base" || (c.path_id && *c.path_id != 1) ||
        (c.segment_list && *c.segment_list != "only")) {
      out.status = PathStateOutcome::Status::not_found;
      return out;
    }
    out.status = PathStateOutcome::Status::ok;
    out.segment_list = "only";
    out.path_id = 1;
    out.changed = down == c.up;
    down = !c.up;
    return out;
  }
};

TEST_F(StateKeeperTest, PathDownIsPersistedAndPutBackWhenItCannotBe) {
  auto keeper = make_keeper();
  FakeEngine eng;
  const PathStateHandler handler = [&](const PathStateCommand& c) { return eng.handle(c); };
  PathStateOutcome out;
  uint64_t generation = 99;
  PathStateCommand cmd{"base", std::string("only"), std::nullopt, false};

  PathStateCommand unknown{"base", std::string("other"), std::nullopt, false};
  auto nf = keeper->set_path_state(unknown, handler, "ctl", out, generation);
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->code, Refusal::Code::not_found);
  EXPECT_EQ(nf->message, "policy 'base' segment-list 'other': no such path");
  EXPECT_FALSE(std::filesystem::exists(state_path()));

  ASSERT_FALSE(keeper->set_path_state(cmd, handler, "ctl", out, generation));
  EXPECT_TRUE(out.changed);
  EXPECT_EQ(generation, 0u);  // a path is not a configuration change
  EXPECT_EQ(persisted().extras.paths_down, (std::vector<PathDown>{{"base", "only", 1}}));

  break_state_directory();
  cmd.up = true;
  auto refusal = keeper->set_path_state(cmd, handler, "ctl", out, generation);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->code, Refusal::Code::unavailable);
  EXPECT_NE(refusal->message.find("put back"), std::string::npos) << refusal->message;
  ASSERT_EQ(eng.commands.size(), 4u);  // unknown, down, up, the undo by path id
  EXPECT_FALSE(eng.commands[3].up);
  EXPECT_EQ(eng.commands[3].path_id, std::optional<uint16_t>(1));
  EXPECT_TRUE(eng.down);
  EXPECT_TRUE(events_so_far().empty());  // path events are the engine's to publish
}

TEST_F(StateKeeperTest, ApplyForgetsPathsDownItsConfigurationNoLongerHas) {
  auto keeper = make_keeper(StateExtras{false, {{"base", "only", 1}, {"gone", "x", 77}}});
  ApplyResult r;
  ASSERT_FALSE(keeper->apply(one_rule(1), std::nullopt, false, "ctl", r));
  EXPECT_EQ(persisted().extras.paths_down, (std::vector<PathDown>{{"base", "only", 1}}));
}

}  // namespace
}  // namespace srv6gw::agent::test
