// SPDX-License-Identifier: BSD-3-Clause
// policy::ExactTable against a std::map model: keys placed beyond their home bucket, deletes
// that leave the probe chains of other keys intact, RCU reuse of entries, and lookups by a
// reader thread while the writer edits the same buckets.
#include "policy/exact_table.hpp"

#include <gtest/gtest.h>
#include <rte_rcu_qsbr.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <thread>
#include <tuple>
#include <vector>

#include "policy/steering.hpp"

namespace srv6gw::policy {
namespace {

struct Key {
  uint64_t head;
  std::array<uint8_t, 16> addr{};
  friend bool operator<(const Key& a, const Key& b) {
    return std::tie(a.head, a.addr) < std::tie(b.head, b.addr);
  }
  friend bool operator==(const Key& a, const Key& b) = default;
  uint32_t hash() const { return exact_table_hash(head, addr.data()); }
};

Key v4_key(uint32_t ip, uint32_t qp, uint8_t dscp = kAnyDscp) {
  Key k;
  k.head = exact_key_head(net::Family::ipv4, qp, dscp);
  std::memcpy(k.addr.data(), &ip, 4);
  return k;
}

// `n` keys whose home is bucket `bucket` of a table of `buckets` buckets.
std::vector<Key> keys_of_bucket(uint32_t bucket, uint32_t buckets, unsigned n, uint32_t ip) {
  std::vector<Key> out;
  for (uint32_t qp = 0; out.size() < n; ++qp) {
    const Key k = v4_key(ip, qp);
    if ((k.hash() & (buckets - 1)) == bucket) out.push_back(k);
  }
  return out;
}

class ExactTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const size_t sz = rte_rcu_qsbr_get_memsize(4);
    qsbr_ = static_cast<rte_rcu_qsbr*>(std::aligned_alloc(64, (sz + 63) / 64 * 64));
    ASSERT_EQ(rte_rcu_qsbr_init(qsbr_, 4), 0);
  }
  void TearDown() override {
    table_.reset();
    std::free(qsbr_);
  }
  ExactTable& create(uint32_t capacity) {
    static std::atomic<unsigned> seq{0};
    std::string error;
    table_ = ExactTable::create("test_exact_" + std::to_string(seq++), capacity, qsbr_, 0, error);
    EXPECT_TRUE(table_) << error;
    return *table_;
  }
  uint32_t lookup(const Key& k) const { return table_->lookup(k.head, k.addr.data(), k.hash()); }
  // Every key of the model is found with its slot, by lookup() and find(); for_each() visits
  // exactly the model's keys at distinct positions.
  void expect_matches(const std::map<Key, uint32_t>& model) {
    for (const auto& [k, slot] : model) {
      ASSERT_EQ(lookup(k), slot);
      uint32_t found = 0;
      ASSERT_GE(table_->find(k.head, k.addr.data(), found), 0);
      ASSERT_EQ(found, slot);
    }
    std::map<Key, uint32_t> seen;
    std::vector<bool> positions(table_->positions());
    table_->for_each([&](uint32_t pos, uint64_t head, const uint8_t* addr, uint32_t slot) {
      Key k;
      k.head = head;
      std::memcpy(k.addr.data(), addr, 16);
      EXPECT_FALSE(positions.at(pos)) << "position " << pos << " twice";
      positions.at(pos) = true;
      seen[k] = slot;
    });
    EXPECT_EQ(seen, model);
    EXPECT_EQ(table_->size(), model.size());
  }

  rte_rcu_qsbr* qsbr_ = nullptr;
  std::unique_ptr<ExactTable> table_;
};

TEST_F(ExactTableTest, SizedWithTwiceAsManyLanesAsEntries) {
  ExactTable& t = create(1000);
  EXPECT_EQ(t.positions(), 1250u);  // a quarter more for entries waiting for reuse
  EXPECT_GE(t.buckets() * ExactTable::kLanes, 2 * t.positions());
  EXPECT_EQ(t.buckets() & (t.buckets() - 1), 0u);
}

TEST_F(ExactTableTest, KeysBeyondTheirHomeBucketAreFoundAndSurviveOtherDeletes) {
  ExactTable& t = create(64);
  const uint32_t buckets = t.buckets();
  // 20 keys of bucket 3: 8 at home, 8 in bucket 4, 4 in bucket 5; and keys of bucket 4 that
  // then go beyond it too.
  std::vector<Key> keys = keys_of_bucket(3, buckets, 20, 0x0a000001);
  const std::vector<Key> fours = keys_of_bucket(4, buckets, 6, 0x0a000002);
  std::map<Key, uint32_t> model;
  uint32_t slot = 100;
  for (const Key& k : keys) {
    ASSERT_TRUE(t.upsert(k.head, k.addr.data(), slot));
    model[k] = slot++;
  }
  for (const Key& k : fours) {
    ASSERT_TRUE(t.upsert(k.head, k.addr.data(), slot));
    model[k] = slot++;
  }
  expect_matches(model);
  EXPECT_EQ(t.displaced(), 12u + 6u);
  // Absent keys of those buckets are misses (the walk ends where the counts end).
  for (const Key& k : keys_of_bucket(3, buckets, 40, 0x0a000003))
    EXPECT_EQ(lookup(k), ExactTable::kMiss);
  // Deleting the home bucket's keys keeps the displaced ones reachable.
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(t.erase(keys[i].head, keys[i].addr.data()));
    model.erase(keys[i]);
  }
  EXPECT_FALSE(t.erase(keys[0].head, keys[0].addr.data()));  // already gone
  expect_matches(model);
  // A new key of bucket 3 takes a freed home lane; updates change the slot in place.
  const Key late = keys_of_bucket(3, buckets, 21, 0x0a000001).back();
  ASSERT_TRUE(t.upsert(late.head, late.addr.data(), 7));
  model[late] = 7;
  ASSERT_TRUE(t.upsert(keys[19].head, keys[19].addr.data(), 8));
  model[keys[19]] = 8;
  expect_matches(model);
  // Everything out: no key left behind, and the counts are back to zero (no displaced key,
  // and every lookup of an absent key of bucket 3 ends there).
  for (const auto& [k, s] : std::map<Key, uint32_t>(model)) {
    ASSERT_TRUE(t.erase(k.head, k.addr.data()));
    model.erase(k);
  }
  expect_matches(model);
  EXPECT_EQ(t.displaced(), 0u);
}

TEST_F(ExactTableTest, RandomEditsMatchAMap) {
  ExactTable& t = create(4000);
  std::mt19937 rng(17);
  std::map<Key, uint32_t> model;
  std::vector<Key> universe;
  for (uint32_t i = 0; i < 6000; ++i) {
    Key k = i % 3 == 0 ? v4_key(0x0a000000 + i / 7, i % 7, uint8_t(i % 2 ? kAnyDscp : 26))
                       : v4_key(0x0b000000 + i, kAnyQp);
    if (i % 5 == 0) {  // IPv6 keys too
      k.head = exact_key_head(net::Family::ipv6, i, kAnyDscp);
      k.addr = {0xfd, 0x00, uint8_t(i >> 8), uint8_t(i)};
    }
    universe.push_back(k);
  }
  for (int step = 0; step < 60000; ++step) {
    const Key& k = universe[rng() % universe.size()];
    const unsigned op = rng() % 3;
    if (op < 2) {
      if (model.size() >= 4000 && !model.count(k)) continue;
      const uint32_t slot = rng() % 1000;
      ASSERT_TRUE(t.upsert(k.head, k.addr.data(), slot)) << "step " << step;
      model[k] = slot;
    } else {
      EXPECT_EQ(t.erase(k.head, k.addr.data()), model.erase(k) == 1) << "step " << step;
    }
  }
  expect_matches(model);
  for (const Key& k : universe) {
    if (!model.count(k)) {
      ASSERT_EQ(lookup(k), ExactTable::kMiss);
    }
  }
}

// A deleted entry is reused only after every reader reported a quiescent state: a full table
// whose freed entries wait for a reader refuses an insert, and takes it once the reader
// reports.
TEST_F(ExactTableTest, DeletedEntriesWaitForTheGracePeriod) {
  ExactTable& t = create(64);
  const uint32_t n = t.positions();
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_TRUE(t.upsert(v4_key(i, 1).head, v4_key(i, 1).addr.data(), i));
  const Key extra = v4_key(999999, 2);
  EXPECT_FALSE(t.upsert(extra.head, extra.addr.data(), 1));  // full, nothing pending
  rte_rcu_qsbr_thread_register(qsbr_, 0);
  rte_rcu_qsbr_thread_online(qsbr_, 0);
  ASSERT_TRUE(t.erase(v4_key(5, 1).head, v4_key(5, 1).addr.data()));
  EXPECT_FALSE(t.upsert(extra.head, extra.addr.data(), 1));  // its entry waits for the reader
  EXPECT_EQ(lookup(extra), ExactTable::kMiss);
  rte_rcu_qsbr_quiescent(qsbr_, 0);
  EXPECT_TRUE(t.upsert(extra.head, extra.addr.data(), 1));
  EXPECT_EQ(lookup(extra), 1u);
  rte_rcu_qsbr_thread_offline(qsbr_, 0);
  rte_rcu_qsbr_thread_unregister(qsbr_, 0);
}

// A reader looks up keys that stay in the table the whole time while the writer inserts,
// updates and deletes other keys of the same buckets (so the stable keys' probe chains and
// lanes change under it). Every lookup of a stable key must return its slot; a churned key
// may be found or not but never with another key's slot.
TEST_F(ExactTableTest, ReaderSeesStableKeysWhileTheWriterChurnsTheirBuckets) {
  ExactTable& t = create(512);
  const uint32_t buckets = t.buckets();
  std::vector<Key> stable, churn;
  for (uint32_t b = 0; b < 4; ++b) {
    const auto ks = keys_of_bucket(b, buckets, 24, 0x0c000000 + b);
    stable.insert(stable.end(), ks.begin(), ks.begin() + 6);
    churn.insert(churn.end(), ks.begin() + 6, ks.end());
  }
  // Stable keys first at the end of their chains: insert churn keys first, then the stable
  // ones (beyond home), then let the churn delete and re-add in front of them.
  for (size_t i = 0; i < churn.size(); ++i)
    ASSERT_TRUE(t.upsert(churn[i].head, churn[i].addr.data(), uint32_t(10000 + i)));
  for (size_t i = 0; i < stable.size(); ++i)
    ASSERT_TRUE(t.upsert(stable[i].head, stable[i].addr.data(), uint32_t(i)));
  ASSERT_GT(t.displaced(), 0u);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> lookups{0}, wrong{0}, rounds{0};
  rte_rcu_qsbr_thread_register(qsbr_, 1);
  std::thread reader([&] {
    rte_rcu_qsbr_thread_online(qsbr_, 1);
    uint64_t n = 0, bad = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      for (size_t i = 0; i < stable.size(); ++i) bad += lookup(stable[i]) != uint32_t(i);
      for (size_t i = 0; i < churn.size(); ++i) {
        const uint32_t s = lookup(churn[i]);
        bad += s != ExactTable::kMiss && (s - 10000) % churn.size() != i;
      }
      n += stable.size() + churn.size();
      rounds.fetch_add(1, std::memory_order_relaxed);
      rte_rcu_qsbr_quiescent(qsbr_, 1);
    }
    rte_rcu_qsbr_thread_offline(qsbr_, 1);
    lookups = n;
    wrong = bad;
  });
  std::mt19937 rng(5);
  std::vector<bool> present(churn.size(), true);
  uint32_t round = 0;
  // At least 200k edits, and until the reader made 5,000 rounds over the keys (on a loaded
  // machine the two threads may take turns on one CPU for a while).
  for (int step = 0; step < 200000 || rounds.load(std::memory_order_relaxed) < 5000; ++step) {
    const size_t i = rng() % churn.size();
    if (present[i]) {
      ASSERT_TRUE(t.erase(churn[i].head, churn[i].addr.data()));
      present[i] = false;
    } else {
      // Slots of key i are 10000 + i + k * churn.size(): an update changes it in place.
      ASSERT_TRUE(t.upsert(churn[i].head, churn[i].addr.data(),
                           uint32_t(10000 + i + (++round % 7) * churn.size())));
      present[i] = true;
    }
  }
  stop = true;
  reader.join();
  rte_rcu_qsbr_thread_unregister(qsbr_, 1);
  EXPECT_GT(lookups.load(), 0u);
  EXPECT_EQ(wrong.load(), 0u) << "of " << lookups.load() << " lookups";
  for (size_t i = 0; i < stable.size(); ++i) EXPECT_EQ(lookup(stable[i]), uint32_t(i));
}

}  // namespace
}  // namespace srv6gw::policy
