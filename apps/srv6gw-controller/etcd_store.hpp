// SPDX-License-Identifier: BSD-3-Clause
// The desired state in etcd, and leader election on an etcd lease (docs/design/controller.md,
// "Replicas on etcd"). Keys under PREFIX (default /srv6gw/controller/):
//   meta              PersistedState JSON: format, topology and plan version, job counter,
//                     links inferred down
//   jobs/<job id>     StoredJob JSON (sequence = submission order)
//   links/<link>      LinkStatus JSON (operator overrides)
//   gateways/<shard>  per gateway of that shard (64, by name hash): the plan version that
//                     last changed its desired state (PersistedState JSON, desired_version)
//   leader            LeaderRecord JSON, attached to the leader's lease
// Every commit is one transaction: it succeeds only if `meta` has the revision this replica
// last read or wrote and the leader key still has this replica's create revision (its term);
// it writes `meta` and only the keys that changed. A follower learns of a change from a watch
// on `meta` (every commit writes it), not by reading etcd over and over.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "etcd_client.hpp"
#include "store.hpp"

namespace srv6gw::sr_controller {

struct EtcdStoreOptions {
  EtcdOptions etcd;
  std::string prefix = "/srv6gw/controller/";
  std::chrono::seconds lease_ttl{2};
  std::string id;       // this replica
  std::string address;  // its API, for followers' errors
};

class EtcdStore final : public Store {
 public:
  static std::unique_ptr<EtcdStore> create(EtcdStoreOptions options, std::string& error);
  ~EtcdStore() override;
  std::string describe() const override;
  bool load(cv1::PersistedState& out, std::string& error) override;
  bool commit(const cv1::PersistedState& st, std::string& error) override;
  bool changed_since_load() override;
  bool start(std::function<void(const Leadership&)> on_change, std::string& error) override;
  void stop() override;
  Leadership leadership() const override;
  bool may_push(uint64_t& term) const override;
  Counters counters() const override {
    std::lock_guard lock(mutex_);
    return counters_;
  }

 private:
  void run();
  void watch_meta();
  void step_down(const std::string& why);
  void notify();
  std::string key(const std::string& k) const { return options_.prefix + k; }

  EtcdStoreOptions options_;
  std::unique_ptr<EtcdClient> client_;
  std::function<void(const Leadership&)> on_change_;

  // The election thread writes; may_push() reads from pass threads.
  std::atomic<bool> leader_{false};
  std::atomic<uint64_t> term_{0};
  std::atomic<int64_t> valid_until_ns_{0};  // steady clock: the lease surely lives until then

  mutable std::mutex mutex_;  // below
  std::string leader_id_, leader_address_;
  int64_t lease_id_ = 0;
  // What this replica last read or wrote (commit writes only the difference).
  int64_t meta_revision_ = 0;  // mod revision of meta; 0 = absent
  cv1::PersistedState last_;
  std::map<std::string, uint64_t> job_sequence_;
  uint64_t next_sequence_ = 1;
  Counters counters_;

  // The watch on meta (watch_meta's thread writes, changed_since_load reads). While the watch
  // is not established, changed_since_load reads meta from etcd instead.
  std::atomic<bool> watching_{false};
  std::atomic<bool> recheck_{false};            // watch (re)created: changes before it are unknown
  std::atomic<int64_t> meta_seen_revision_{0};  // newest mod revision of meta the watch saw
  std::mutex watch_mutex_;
  grpc::ClientContext* watch_ctx_ = nullptr;  // under watch_mutex_: stop() cancels it

  std::thread thread_, watch_thread_;
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // under stop_mutex_
};

}  // namespace srv6gw::sr_controller
