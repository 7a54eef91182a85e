// SPDX-License-Identifier: BSD-3-Clause
// The agent's journal without gRPC (issue 20): the persisted state (snapshot + replay of the
// journal) equals the running state after every change of random sequences of batches,
// engine parameters and path downs, with snapshots taken in the middle of the stream; a torn
// last record at every byte offset is dropped and the journal continues after it; a checksum
// failure at the tail is a torn record, before the tail it is corruption, kept aside loudly
// with the state up to it restored; a format-1 state file (before the journal) is read and
// continued. Group commit: concurrent Applies share fdatasyncs and none is answered before
// its record is durable (checked against the image a crash at each sync would leave); a
// failed sync rolls back every change not yet durable. Background compaction during a
// stream of concurrent Applies.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "agent/convert.hpp"
#include "agent/journal.hpp"
#include "agent/state_keeper.hpp"
#include "agent_test_util.hpp"

namespace srv6gw::agent::test {
namespace {

using Changes = google::protobuf::RepeatedPtrField<v1::Change>;

// What is compared: the sections the agent owns, in key order, and the generation.
struct Comparable {
  std::vector<config::Policy> policies;
  std::vector<config::SteeringRule> steering;
  std::vector<config::LocalSid> local_sids;
  engine::Params engine;
  uint64_t generation = 0;
  bool operator==(const Comparable&) const = default;
};

Comparable comparable(const config::GatewayConfig& cfg, uint64_t generation) {
  Comparable c{cfg.policies, cfg.steering, cfg.local_sids, cfg.engine, generation};
  std::sort(c.policies.begin(), c.policies.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  std::sort(c.steering.begin(), c.steering.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  std::sort(c.local_sids.begin(), c.local_sids.end(),
            [](const auto& a, const auto& b) { return a.sid < b.sid; });
  return c;
}

std::string describe(const Comparable& c) {
  return "generation " + std::to_string(c.generation) + ", " + std::to_string(c.policies.size()) +
         " policies, " + std::to_string(c.steering.size()) + " rules, " +
         std::to_string(c.local_sids.size()) + " local SIDs, alpha " +
         std::to_string(c.engine.alpha);
}

// The engine side of SetPathState: path "only" (id 1) of policy "base".
struct FakeEngine {
  bool down = false;
  PathStateOutcome handle(const PathStateCommand& c) {
    PathStateOutcome out;
    out.status = PathStateOutcome::Status::ok;
    out.segment_list = "only";
    out.path_id = 1;
    out.changed = down == c.up;
    down = !c.up;
    return out;
  }
};

class JournalTest : public ::testing::Test {
 protected:
  JournalTest() { sink.running = base_config(); }

  std::string state_path() const { return dir.file("state.json"); }
  std::string jpath() const { return journal_path(state_path()); }

  std::unique_ptr<StateKeeper> make_keeper(const config::GatewayConfig& cfg, uint64_t generation,
                                           const StateExtras& extras = {}) {
    sink.running = cfg;
    return std::make_unique<StateKeeper>(state_path(), sink, bus, cfg, generation, extras);
  }

  PersistedState persisted(bool accept_corrupt = false) {
    auto r = read_state_file(state_path(), accept_corrupt);
    if (auto* why = std::get_if<std::string>(&r)) ADD_FAILURE() << *why;
    return std::get_if<PersistedState>(&r) ? std::get<PersistedState>(r) : PersistedState{};
  }

  // One random change of the kinds a controller makes; returns false when it was refused
  // (a refusal changes nothing, which the comparison checks too).
  bool random_change(StateKeeper& keeper, FakeEngine& eng) {
    const int kind = int(rng() % 100);
    if (kind < 6) {  // engine parameters
      const double alphas[] = {0.25, 0.5, 0.125, 1.0};
      const double alpha = alphas[rng() % 4];
      EngineParamsResult r;
      return !keeper.set_engine_params(
          [&](engine::Params& p) {
            p.alpha = alpha;
            return std::string();
          },
          std::nullopt, false, "test", r);
    }
    if (kind < 12) {  // a path down or up
      PathStateOutcome out;
      uint64_t generation = 0;
      PathStateCommand cmd{"base", std::string("only"), std::nullopt, bool(rng() % 2)};
      return !keeper.set_path_state(
          cmd, [&](const PathStateCommand& c) { return eng.handle(c); }, "test", out, generation);
    }
    // A batch of 1..10 changes.
    Changes changes;
    const auto state = keeper.snapshot();
    std::set<std::string> used_policies;
    for (const auto& r : state->config.steering) used_policies.insert(r.policy);
    const int n = 1 + int(rng() % 10);
    for (int i = 0; i < n; ++i) {
      const int what = int(rng() % 100);
      const uint32_t id = 1 + uint32_t(rng() % 400);
      if (what < 50) {
        const int p = int(rng() % 5);
        std::string policy = "base";
        for (const auto& pol : state->config.policies)
          if (pol.name == "p" + std::to_string(p)) policy = pol.name;
        *changes.Add()->mutable_upsert_steering() =
            exact_rule(id, ipv4_from(id), id % 1000 + 1, policy);
      } else if (what < 75) {
        if (state->config.steering.empty()) continue;
        changes.Add()->set_delete_steering(
            state->config.steering[rng() % state->config.steering.size()].id);
      } else if (what < 85) {
        const int p = int(rng() % 5);
        auto pol = make_policy("p" + std::to_string(p), 100 + 10 * uint32_t(p), 1 + int(rng() % 3));
        pol.set_color(uint32_t(rng() % 50));
        *changes.Add()->mutable_upsert_policy() = pol;
      } else if (what < 90) {
        const std::string name = "p" + std::to_string(rng() % 5);
        if (used_policies.count(name)) continue;
        bool exists = false;
        for (const auto& pol : state->config.policies) exists |= pol.name == name;
        if (exists) changes.Add()->set_delete_policy(name);
      } else if (what < 96) {
        auto* ls = changes.Add()->mutable_upsert_local_sid();
        ls->set_sid("fc00:0:1::" + std::to_string(100 + rng() % 20));
        ls->set_behavior(rng() % 2 ? v1::LOCAL_SID_BEHAVIOR_END_DX4
                                   : v1::LOCAL_SID_BEHAVIOR_END_DT46);
      } else {
        if (state->config.local_sids.empty()) continue;
        changes.Add()->set_delete_local_sid(
            net::to_string(state->config.local_sids[rng() % state->config.local_sids.size()].sid));
      }
    }
    if (changes.empty()) return false;
    ApplyResult r;
    return !keeper.apply(changes, std::nullopt, false, "test", r);
  }

  void expect_persisted_equals_running(StateKeeper& keeper, const FakeEngine& eng,
                                       const std::string& when) {
    keeper.wait_background_compaction();  // the files are not renamed while read
    const PersistedState file = persisted();
    const auto running = keeper.snapshot();
    const Comparable want = comparable(running->config, running->generation);
    const Comparable got = comparable(file.config, file.generation);
    ASSERT_TRUE(got == want) << when << ": persisted " << describe(got) << ", running "
                             << describe(want);
    EXPECT_EQ(file.extras.engine_params_from_agent, keeper.engine_params_from_agent()) << when;
    const std::vector<PathDown> down_now =
        eng.down ? std::vector<PathDown>{{"base", "only", 1}} : std::vector<PathDown>{};
    EXPECT_EQ(file.extras.paths_down, down_now) << when;
  }

  TempDir dir;
  FakeSink sink;
  EventBus bus;
  std::mt19937_64 rng{20};
};

TEST_F(JournalTest, ReplayEqualsTheRunningStateThroughRandomChangesAndCompactions) {
  for (const size_t min_bytes : {size_t(16) << 20, size_t(2000)}) {
    std::filesystem::remove_all(dir.path());
    std::filesystem::create_directories(dir.path());
    FakeEngine eng;
    auto keeper = make_keeper(base_config(), 0);
    keeper->set_journal_min_bytes(min_bytes);
    int applied = 0;
    for (int i = 0; i < 250; ++i) {
      applied += random_change(*keeper, eng);
      expect_persisted_equals_running(*keeper, eng, "change " + std::to_string(i));
      if (HasFatalFailure()) return;
    }
    const auto counts = keeper->persist_counts();
    std::cout << "min " << min_bytes << " bytes: " << applied << " of 250 changes applied, "
              << counts.records << " journal records, " << counts.snapshots << " snapshots\n";
    EXPECT_GT(applied, 150);
    if (min_bytes > 1000000) {
      // Only the first change wrote a snapshot: every other one is a journal record.
      EXPECT_EQ(counts.snapshots, 1u);
      EXPECT_GE(counts.records + 1, uint64_t(applied) - 20);  // path up/down no-ops aside
    } else {
      // The journal passed the snapshot's size many times: compacted in the background.
      EXPECT_GT(counts.snapshots, 3u);
      EXPECT_EQ(counts.background_snapshots + 1, counts.snapshots);
    }
    // A snapshot alone (the journal emptied) gives the same state as snapshot + replay.
    const PersistedState before = persisted();
    ASSERT_EQ(keeper->compact(), "");
    const PersistedState after = persisted();
    EXPECT_EQ(after.journal_records, 0u);
    EXPECT_TRUE(comparable(after.config, after.generation) ==
                comparable(before.config, before.generation));
    EXPECT_EQ(after.extras, before.extras);
    // And a restart (restore + a new keeper) continues the same history.
    StartupState st = restore_startup_state(state_path(), base_config());
    ASSERT_TRUE(st.restored);
    keeper = make_keeper(st.config, st.generation, st.extras);
    for (int i = 0; i < 30; ++i) {
      random_change(*keeper, eng);
      expect_persisted_equals_running(*keeper, eng, "after restart, change " + std::to_string(i));
      if (HasFatalFailure()) return;
    }
    EXPECT_EQ(keeper->persist_counts().snapshots, 0u);  // appended to the restored journal
  }
}

// `threads` appliers, each making `per_thread` Applies of 1..4 steering upserts of rules of
// its own (never refused). `on_ack(generation)` runs in the applier as each is answered.
template <typename OnAck>
void concurrent_applies(StateKeeper& keeper, int threads, int per_thread, OnAck on_ack) {
  std::vector<std::thread> appliers;
  for (int t = 0; t < threads; ++t) {
    appliers.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        Changes changes;
        for (int k = 0; k <= i % 4; ++k) {
          const uint32_t id = 1 + uint32_t(t * 1000 + (i * 7 + k) % 300);
          *changes.Add()->mutable_upsert_steering() =
              exact_rule(id, ipv4_from(id), (id + uint32_t(i)) % 1000 + 1, "base");
        }
        ApplyResult r;
        if (auto refusal = keeper.apply(changes, std::nullopt, false, "test", r)) {
          ADD_FAILURE() << "thread " << t << " Apply " << i << ": " << refusal->message;
          return;
        }
        on_ack(r.generation);
      }
    });
  }
  for (auto& a : appliers) a.join();
}

TEST_F(JournalTest, GroupCommitAnswersNoApplyBeforeItsRecordIsDurable) {
  auto keeper = make_keeper(base_config(), 0);
  {  // the first change writes the snapshot; the journal starts after it
    Changes first;
    *first.Add()->mutable_upsert_steering() = exact_rule(100000, "10.9.9.9", 1, "base");
    ApplyResult r;
    ASSERT_FALSE(keeper->apply(first, std::nullopt, false, "test", r));
  }
  // What a crash would leave: the journal's bytes covered by the last fdatasync. The observer
  // runs in the syncing thread; it lingers a little so that the other appliers write their
  // records meanwhile and the next fdatasync covers several.
  std::mutex image_mutex;
  size_t durable_bytes = 0;
  std::atomic<int> syncs_seen{0};
  set_sync_observer([&](const std::string& path, size_t bytes) {
    EXPECT_EQ(path, jpath());
    {
      std::lock_guard lock(image_mutex);
      durable_bytes = std::max(durable_bytes, bytes);
    }
    if (syncs_seen++ < 20) std::this_thread::sleep_for(std::chrono::milliseconds(3));
  });
  // The crash image of now: the snapshot and the durable prefix of the journal.
  auto crash_image_generation = [&]() -> uint64_t {
    size_t bytes = 0;
    {
      std::lock_guard lock(image_mutex);
      bytes = durable_bytes;
    }
    TempDir crash;
    std::filesystem::copy_file(state_path(), crash.file("state.json"));
    {
      std::ofstream(crash.file("state.json.journal"), std::ios::binary)
          << slurp(jpath()).substr(0, bytes);
    }
    auto r = read_state_file(crash.file("state.json"));
    if (auto* why = std::get_if<std::string>(&r)) {
      ADD_FAILURE() << "crash image: " << *why;
      return 0;
    }
    return std::get<PersistedState>(r).generation;
  };
  std::mutex acked_mutex;
  std::vector<uint64_t> acked;
  concurrent_applies(*keeper, 6, 15, [&](uint64_t generation) {
    // Answered: a crash now restores this generation or a later one (a later change may be
    // durable too: the records are in generation order).
    EXPECT_GE(crash_image_generation(), generation);
    std::lock_guard lock(acked_mutex);
    acked.push_back(generation);
  });
  set_sync_observer(nullptr);
  ASSERT_EQ(acked.size(), 90u);
  std::sort(acked.begin(), acked.end());
  EXPECT_EQ(acked.front(), 2u);
  EXPECT_EQ(acked.back(), 91u);  // every generation answered once
  EXPECT_EQ(std::adjacent_find(acked.begin(), acked.end()), acked.end());
  const auto counts = keeper->persist_counts();
  std::cout << counts.records << " journal records, " << counts.syncs << " fdatasyncs\n";
  EXPECT_EQ(counts.records, 90u);
  EXPECT_LT(counts.syncs, counts.records);  // some fdatasyncs covered several Applies
  // The last crash image is the running state.
  EXPECT_EQ(crash_image_generation(), 91u);
  FakeEngine eng;
  expect_persisted_equals_running(*keeper, eng, "after the concurrent Applies");
}

TEST_F(JournalTest, FailedSyncRollsBackEveryChangeNotYetDurable) {
  const std::string sub = dir.file("sub");
  std::filesystem::create_directory(sub);
  sink.running = base_config();
  StateKeeper keeper(sub + "/state.json", sink, bus, base_config(), 0, {});
  Changes first;
  *first.Add()->mutable_upsert_steering() = exact_rule(100000, "10.9.9.9", 1, "base");
  ApplyResult r;
  ASSERT_FALSE(keeper.apply(first, std::nullopt, false, "test", r));
  const auto before = keeper.snapshot();
  // The state directory disappears: every sync fails (the journal file is gone), and each
  // change is rolled back, whoever ran the sync.
  std::filesystem::remove_all(sub);
  std::atomic<int> acked{0};
  std::vector<std::thread> appliers;
  std::atomic<int> refused_unavailable{0};
  for (int t = 0; t < 4; ++t) {
    appliers.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        Changes changes;
        *changes.Add()->mutable_upsert_steering() =
            exact_rule(uint32_t(t * 10 + i + 1), ipv4_from(uint32_t(t * 10 + i + 1)), 7, "base");
        ApplyResult res;
        auto refusal = keeper.apply(changes, std::nullopt, false, "test", res);
        if (!refusal)
          ++acked;
        else if (refusal->code == Refusal::Code::unavailable)
          ++refused_unavailable;
      }
    });
  }
  for (auto& a : appliers) a.join();
  EXPECT_EQ(acked.load(), 0);
  EXPECT_EQ(refused_unavailable.load(), 20);
  const auto after = keeper.snapshot();
  EXPECT_EQ(after->generation, before->generation);
  EXPECT_TRUE(comparable(after->config, after->generation) ==
              comparable(before->config, before->generation));
  std::lock_guard lock(sink.mutex);
  EXPECT_TRUE(comparable(sink.running, 0) == comparable(before->config, 0));  // data plane too
}

TEST_F(JournalTest, BackgroundCompactionDuringAStreamOfConcurrentApplies) {
  auto keeper = make_keeper(base_config(), 0);
  keeper->set_journal_min_bytes(4000);
  std::atomic<uint64_t> last_acked{0};
  concurrent_applies(*keeper, 4, 60, [&](uint64_t generation) {
    uint64_t seen = last_acked.load();
    while (seen < generation && !last_acked.compare_exchange_weak(seen, generation)) {
    }
  });
  keeper->wait_background_compaction();
  const auto counts = keeper->persist_counts();
  std::cout << counts.records << " journal records, " << counts.syncs << " fdatasyncs, "
            << counts.background_snapshots << " background snapshots of " << counts.snapshots
            << "\n";
  // The journal passed its bound (the snapshot's size, a few kB, growing with the rules)
  // while the appliers ran.
  EXPECT_GE(counts.background_snapshots, 1u);
  EXPECT_LT(counts.syncs, counts.records);
  EXPECT_EQ(last_acked.load(), 240u);
  FakeEngine eng;
  expect_persisted_equals_running(*keeper, eng, "after the stream");
  // A restart continues the same history from the last snapshot and the journal after it.
  StartupState st = restore_startup_state(state_path(), base_config());
  ASSERT_TRUE(st.restored);
  EXPECT_EQ(st.generation, 240u);
  keeper = make_keeper(st.config, st.generation, st.extras);
  for (int i = 0; i < 10; ++i) {
    random_change(*keeper, eng);
    expect_persisted_equals_running(*keeper, eng, "after restart, change " + std::to_string(i));
    if (HasFatalFailure()) return;
  }
}

// A journal of a few records after a snapshot; `states[k]` is the state after k records.
struct History {
  std::vector<Comparable> states;
  std::vector<StateExtras> extras;
  std::vector<size_t> record_start;  // byte offset of record k (0-based) in the journal
  std::string journal;               // the journal's bytes
};

class JournalFileTest : public JournalTest {
 protected:
  History make_history(int records) {
    History h;
    FakeEngine eng;
    auto keeper = make_keeper(base_config(), 0);
    // The first change writes the snapshot.
    ApplyResult r;
    EXPECT_FALSE(keeper->apply(one_rule(1000), std::nullopt, false, "test", r));
    EXPECT_EQ(keeper->persist_counts().records, 0u);
    auto push_state = [&] {
      const auto s = keeper->snapshot();
      h.states.push_back(comparable(s->config, s->generation));
      h.extras.push_back(persisted().extras);
      h.record_start.push_back(std::filesystem::file_size(jpath()));
    };
    push_state();
    while (keeper->persist_counts().records < uint64_t(records)) {
      const auto before = keeper->persist_counts().records;
      random_change(*keeper, eng);
      if (keeper->persist_counts().records != before) push_state();
    }
    h.journal = slurp(jpath());
    h.record_start.pop_back();  // the end of the file, not a record
    return h;
  }
  static Changes one_rule(uint32_t id) {
    Changes c;
    *c.Add()->mutable_upsert_steering() = exact_rule(id, ipv4_from(id), id, "base");
    return c;
  }
  void write_journal(const std::string& bytes) {
    std::ofstream(jpath(), std::ios::binary | std::ios::trunc) << bytes;
  }
};

TEST_F(JournalFileTest, TornLastRecordAtEveryByteOffsetIsDropped) {
  const History h = make_history(6);
  ASSERT_EQ(h.states.size(), 7u);
  const size_t last = h.record_start.back();
  for (size_t cut = last; cut < h.journal.size(); ++cut) {
    write_journal(h.journal.substr(0, cut));
    const PersistedState st = persisted();
    ASSERT_TRUE(comparable(st.config, st.generation) == h.states[5]) << "cut at byte " << cut;
    EXPECT_EQ(st.extras, h.extras[5]) << "cut at byte " << cut;
    EXPECT_EQ(st.torn_bytes, cut - last);
    EXPECT_TRUE(st.journal_corrupt.empty());
  }
  // The whole record: the last state.
  write_journal(h.journal);
  EXPECT_TRUE(comparable(persisted().config, persisted().generation) == h.states[6]);

  // A restart on a torn journal cuts the tail off and appends after the last good record.
  write_journal(h.journal.substr(0, last + 30));
  StartupState st = restore_startup_state(state_path(), base_config());
  ASSERT_TRUE(st.restored);
  EXPECT_TRUE(comparable(st.config, st.generation) == h.states[5]);
  auto keeper = make_keeper(st.config, st.generation, st.extras);
  ApplyResult r;
  ASSERT_FALSE(keeper->apply(one_rule(5000), std::nullopt, false, "test", r));
  EXPECT_EQ(keeper->persist_counts().snapshots, 0u);
  const PersistedState after = persisted();
  EXPECT_EQ(after.torn_bytes, 0u);
  EXPECT_TRUE(comparable(after.config, after.generation) ==
              comparable(keeper->snapshot()->config, keeper->snapshot()->generation));
}

TEST_F(JournalFileTest, ChecksumFailureAtTheTailIsTornBeforeItCorrupt) {
  const History h = make_history(6);
  const size_t last = h.record_start.back();
  // A flipped byte in the last record's body: that record was never acknowledged whole.
  std::string bad = h.journal;
  bad[last + kJournalRecordHeader + 3] ^= 0x40;
  write_journal(bad);
  PersistedState st = persisted();
  EXPECT_TRUE(comparable(st.config, st.generation) == h.states[5]);
  EXPECT_EQ(st.torn_bytes, h.journal.size() - last);

  // In the body of record 2 (0-based), records follow: corruption. Strict reading refuses;
  // the restore takes the state before it, keeps the journal aside and writes a snapshot.
  for (const size_t offset : {kJournalRecordHeader + 2, size_t(5), size_t(13)}) {
    SCOPED_TRACE("byte " + std::to_string(offset) + " of record 2");
    std::filesystem::remove_all(dir.path());
    std::filesystem::create_directories(dir.path());
    const History h2 = make_history(6);
    bad = h2.journal;
    bad[h2.record_start[2] + offset] ^= 0x01;
    write_journal(bad);
    auto strict = read_state_file(state_path());
    ASSERT_TRUE(std::holds_alternative<std::string>(strict));
    EXPECT_NE(
        std::get<std::string>(strict).find("record at byte " + std::to_string(h2.record_start[2])),
        std::string::npos)
        << std::get<std::string>(strict);
    st = persisted(/*accept_corrupt=*/true);
    EXPECT_FALSE(st.journal_corrupt.empty());
    EXPECT_TRUE(comparable(st.config, st.generation) == h2.states[2]);

    StartupState restored = restore_startup_state(state_path(), base_config());
    ASSERT_TRUE(restored.restored);
    EXPECT_TRUE(comparable(restored.config, restored.generation) == h2.states[2]);
    EXPECT_EQ(restored.extras, h2.extras[2]);
    EXPECT_NE(restored.set_aside.find(".journal.corrupt-"), std::string::npos)
        << restored.set_aside;
    EXPECT_TRUE(std::filesystem::exists(restored.set_aside));
    EXPECT_FALSE(std::filesystem::exists(jpath()));
    st = persisted();  // the new snapshot alone
    EXPECT_EQ(st.journal_records, 0u);
    EXPECT_TRUE(comparable(st.config, st.generation) == h2.states[2]);
    // The agent continues from it.
    auto keeper = make_keeper(restored.config, restored.generation, restored.extras);
    ApplyResult r;
    ASSERT_FALSE(keeper->apply(one_rule(5000), std::nullopt, false, "test", r));
    EXPECT_EQ(keeper->persist_counts().snapshots, 0u);
    st = persisted();
    EXPECT_EQ(st.journal_records, 1u);
    EXPECT_EQ(st.generation, h2.states[2].generation + 1);
  }
}

// Group commit: records written after the last sync may reach the disk out of order. Here
// records 3..5 (0-based) were written before any of them was synced (each says record 2 was
// the last durable one): record 3 damaged with 4 and 5 intact is an unsynced tail, dropped
// quietly. Once a later record says record 3 was durable, the same damage is corruption.
TEST_F(JournalFileTest, UnsyncedRecordsOutOfOrderAreATornTailNotCorruption) {
  const History h = make_history(6);
  std::string error;
  auto read = read_journal(jpath(), 0, /*decode=*/true, error);
  ASSERT_TRUE(read) << error;
  ASSERT_EQ(read->records.size(), 6u);
  const uint64_t durable = read->records[2].sequence;
  auto journal_with = [&](uint64_t mark_of_last) {
    std::string j = h.journal.substr(0, h.record_start[3]);
    for (size_t k = 3; k < 6; ++k) {
      JournalRecord r = read->records[k];
      r.durable = k == 5 ? mark_of_last : durable;
      encode_record(r, j);
    }
    return j;
  };
  const std::string unsynced = journal_with(durable);
  const size_t start3 = h.record_start[3];
  std::string record3_only;
  {
    JournalRecord r = read->records[3];
    r.durable = durable;
    encode_record(r, record3_only);
  }
  struct Damage {
    const char* what;
    std::function<void(std::string&)> apply;
  };
  const std::vector<Damage> damages = {
      {"record 3 never reached the disk (zeros)",
       [&](std::string& j) { std::fill_n(j.begin() + long(start3), record3_only.size(), '\0'); }},
      {"a flipped byte in record 3's body",
       [&](std::string& j) { j[start3 + kJournalRecordHeader + 2] ^= 0x10; }},
      {"a flipped byte in record 3's header", [&](std::string& j) { j[start3 + 9] ^= 0x10; }},
  };
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.what);
    std::string j = unsynced;
    d.apply(j);
    write_journal(j);
    const PersistedState st = persisted();  // strict reading accepts it
    EXPECT_TRUE(st.journal_corrupt.empty()) << st.journal_corrupt;
    EXPECT_TRUE(comparable(st.config, st.generation) == h.states[3]);
    EXPECT_EQ(st.torn_bytes, j.size() - start3);

    // Record 5 says record 3 was durable: the damage is corruption.
    j = journal_with(read->records[3].sequence);
    d.apply(j);
    write_journal(j);
    auto strict = read_state_file(state_path());
    ASSERT_TRUE(std::holds_alternative<std::string>(strict));
    EXPECT_NE(std::get<std::string>(strict).find("was durable"), std::string::npos)
        << std::get<std::string>(strict);
    const PersistedState kept = persisted(/*accept_corrupt=*/true);
    EXPECT_FALSE(kept.journal_corrupt.empty());
    EXPECT_TRUE(comparable(kept.config, kept.generation) == h.states[3]);
  }
  // A restart on the unsynced tail cuts it off and appends after record 2.
  std::string j = unsynced;
  damages[1].apply(j);
  write_journal(j);
  StartupState st = restore_startup_state(state_path(), base_config());
  ASSERT_TRUE(st.restored);
  EXPECT_TRUE(st.set_aside.empty()) << st.set_aside;
  EXPECT_TRUE(comparable(st.config, st.generation) == h.states[3]);
  auto keeper = make_keeper(st.config, st.generation, st.extras);
  ApplyResult r;
  ASSERT_FALSE(keeper->apply(one_rule(5000), std::nullopt, false, "test", r));
  EXPECT_EQ(keeper->persist_counts().snapshots, 0u);
  const PersistedState after = persisted();
  EXPECT_EQ(after.torn_bytes, 0u);
  EXPECT_EQ(after.journal_records, 4u);
}

// A journal of format 1 (before the durable sequence): the same records with a 24-byte header.
std::string to_format_one(const History& h) {
  std::string out = std::string(kJournalFormat1) + "\n";
  std::vector<size_t> starts = h.record_start;
  starts.push_back(h.journal.size());
  for (size_t k = 0; k + 1 < starts.size(); ++k) {
    const std::string_view rec =
        std::string_view(h.journal).substr(starts[k], starts[k + 1] - starts[k]);
    std::string head(rec.substr(0, 16));
    head[3] = '1';  // "SRJ1"
    const uint32_t head_crc =
        uint32_t(::crc32(::crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(head.data()), 16));
    head.append(reinterpret_cast<const char*>(&head_crc), 4);
    head.append(rec.substr(28, 4));  // the body's CRC
    out += head;
    out += rec.substr(kJournalRecordHeader);
  }
  return out;
}

TEST_F(JournalFileTest, FormatOneJournalIsReadAndReplacedByFormatTwo) {
  const History h = make_history(6);
  const std::string v1 = to_format_one(h);
  ASSERT_EQ(v1.size(), h.journal.size() - 6 * (kJournalRecordHeader - kJournalRecordHeader1));
  write_journal(v1);
  PersistedState st = persisted();
  EXPECT_TRUE(comparable(st.config, st.generation) == h.states[6]);
  EXPECT_EQ(st.journal_records, 6u);
  // Its torn tail at every byte of the last record, and its corruption rule.
  const size_t last = v1.size() - (h.journal.size() - h.record_start.back()) +
                      (kJournalRecordHeader - kJournalRecordHeader1);
  for (size_t cut = last; cut < v1.size(); ++cut) {
    write_journal(v1.substr(0, cut));
    st = persisted();
    ASSERT_TRUE(comparable(st.config, st.generation) == h.states[5]) << "cut at byte " << cut;
    EXPECT_EQ(st.torn_bytes, cut - last);
  }
  std::string bad = v1;
  bad[v1.size() / 2] ^= 0x01;
  write_journal(bad);
  EXPECT_FALSE(persisted(/*accept_corrupt=*/true).journal_corrupt.empty());

  // The agent restores from it and, not appending to format 1, writes a snapshot and a
  // format-2 journal at the first change.
  write_journal(v1);
  StartupState restored = restore_startup_state(state_path(), base_config());
  ASSERT_TRUE(restored.restored);
  EXPECT_TRUE(comparable(restored.config, restored.generation) == h.states[6]);
  auto keeper = make_keeper(restored.config, restored.generation, restored.extras);
  ApplyResult r;
  ASSERT_FALSE(keeper->apply(one_rule(5000), std::nullopt, false, "test", r));
  EXPECT_EQ(keeper->persist_counts().snapshots, 1u);
  ASSERT_FALSE(keeper->apply(one_rule(5001), std::nullopt, false, "test", r));
  EXPECT_EQ(slurp(jpath()).substr(0, kJournalFormat.size()), kJournalFormat);
  st = persisted();
  EXPECT_EQ(st.journal_records, 1u);
  EXPECT_TRUE(comparable(st.config, st.generation) ==
              comparable(keeper->snapshot()->config, keeper->snapshot()->generation));
}

TEST_F(JournalFileTest, JournalWithoutSnapshotOrNotAJournalIsSetAside) {
  const History h = make_history(3);
  std::filesystem::remove(state_path());
  StartupState st = restore_startup_state(state_path(), base_config());
  EXPECT_FALSE(st.restored);
  EXPECT_EQ(st.generation, 0u);
  EXPECT_NE(st.set_aside.find(".journal.corrupt-"), std::string::npos) << st.set_aside;
  EXPECT_FALSE(std::filesystem::exists(jpath()));

  std::filesystem::remove_all(dir.path());
  std::filesystem::create_directories(dir.path());
  const History h2 = make_history(3);
  write_journal("not a journal\n" + h2.journal);
  st = restore_startup_state(state_path(), base_config());
  ASSERT_TRUE(st.restored);
  EXPECT_TRUE(comparable(st.config, st.generation) == h2.states[0]);  // the snapshot alone
  EXPECT_NE(st.set_aside.find(".journal.corrupt-"), std::string::npos) << st.set_aside;
}

TEST_F(JournalFileTest, FormatOneStateFileIsReadAndContinued) {
  // What the agent wrote before the journal: the same file without "journal-sequence", format 1.
  config::GatewayConfig cfg = base_config();
  {
    auto keeper = make_keeper(cfg, 0);
    ApplyResult r;
    ASSERT_FALSE(keeper->apply(one_rule(7), std::nullopt, false, "test", r));
    ASSERT_FALSE(keeper->apply(one_rule(8), std::nullopt, false, "test", r));
    ASSERT_EQ(keeper->compact(), "");
  }
  std::filesystem::remove(jpath());
  std::string text = slurp(state_path());
  const auto format = text.find("srv6gw-agent-state/2");
  ASSERT_NE(format, std::string::npos);
  text.replace(format, 20, "srv6gw-agent-state/1");
  const auto seq = text.find("  \"journal-sequence\"");
  ASSERT_NE(seq, std::string::npos);
  text.erase(seq, text.find('\n', seq) - seq + 1);
  std::ofstream(state_path(), std::ios::trunc) << text;

  StartupState st = restore_startup_state(state_path(), base_config());
  ASSERT_TRUE(st.restored) << st.set_aside;
  EXPECT_EQ(st.generation, 2u);
  EXPECT_EQ(st.config.steering.size(), 2u);
  auto head = read_snapshot_head(state_path());
  ASSERT_TRUE(std::holds_alternative<SnapshotHead>(head));
  EXPECT_EQ(std::get<SnapshotHead>(head).format, 1u);

  // The upgraded agent journals after the format-1 snapshot (sequence 0) ...
  auto keeper = make_keeper(st.config, st.generation, st.extras);
  ApplyResult r;
  ASSERT_FALSE(keeper->apply(one_rule(9), std::nullopt, false, "test", r));
  EXPECT_EQ(keeper->persist_counts().snapshots, 0u);
  PersistedState file = persisted();
  EXPECT_EQ(file.generation, 3u);
  EXPECT_EQ(file.journal_records, 1u);
  EXPECT_EQ(file.config.steering.size(), 3u);
  // ... and its first snapshot is format 2.
  ASSERT_EQ(keeper->compact(), "");
  EXPECT_EQ(std::get<SnapshotHead>(read_snapshot_head(state_path())).format, 2u);
  EXPECT_EQ(persisted().config.steering.size(), 3u);
}

TEST_F(JournalFileTest, RecordsRoundTrip) {
  JournalRecord rec;
  rec.sequence = 42;
  rec.generation = 7;
  config::Policy p;
  FieldError fe;
  ASSERT_TRUE(from_proto(make_policy("rt", 300, 3), p, fe));
  p.source = v6("fc00:0:9::9");
  p.probe_sid = v6("fc00:0:9::77");
  rec.changes.policies.emplace_back("rt", p);
  rec.changes.policies.emplace_back("gone", std::nullopt);
  config::SteeringRule rule;
  ASSERT_TRUE(from_proto(exact_rule(5, "10.0.0.5", 55, "rt"), rule, fe));
  rule.dscp = 26;
  rec.changes.rules.emplace_back(5, rule);
  rec.changes.rules.emplace_back(6, std::nullopt);
  rec.changes.local_sids.emplace_back(v6("fc00::5"), config::LocalSid{v6("fc00::5"), {}});
  rec.changes.local_sids.emplace_back(v6("fc00::6"), std::nullopt);
  engine::Params e;
  e.alpha = 0.375;
  e.reflect = false;
  e.hold_down_us = 1234;
  rec.engine = e;
  rec.paths_down = std::vector<PathDown>{{"rt", "sl1", 301}, {"x", "", 9}};
  std::string bytes = std::string(kJournalFormat) + "\n";
  encode_record(rec, bytes);
  write_journal(bytes);
  std::string error;
  auto read = read_journal(jpath(), 0, true, error);
  ASSERT_TRUE(read) << error;
  ASSERT_EQ(read->records.size(), 1u);
  const JournalRecord& got = read->records[0];
  EXPECT_EQ(got.sequence, 42u);
  EXPECT_EQ(got.generation, 7u);
  EXPECT_EQ(got.changes.policies, rec.changes.policies);
  EXPECT_EQ(got.changes.rules, rec.changes.rules);
  EXPECT_EQ(got.changes.local_sids, rec.changes.local_sids);
  EXPECT_EQ(got.engine, rec.engine);
  EXPECT_EQ(got.paths_down, rec.paths_down);
}

}  // namespace
}  // namespace srv6gw::agent::test
