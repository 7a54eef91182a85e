// SPDX-License-Identifier: BSD-3-Clause
// Where the controller keeps its desired state (topology version, plan version, jobs in
// submission order, operator link overrides, links inferred down, desired plan version per
// gateway) and who may change it. LocalStore: one JSON file, this process always leads (the
// embedded default). EtcdStore (etcd_store.hpp): keys under one prefix in etcd, written in
// transactions guarded by the revision last read and by this replica's leader key, with
// leader election on an etcd lease.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "srv6gw/controller/v1/controller.pb.h"

namespace srv6gw::sr_controller {

namespace cv1 = ::srv6gw::controller::v1;

// Who leads, as this replica sees it.
struct Leadership {
  bool is_leader = false;
  uint64_t term = 0;   // this replica's term while it leads (etcd: leader key revision)
  std::string leader;  // the leader's id ("" = none known)
  std::string leader_address;
};

class Store {
 public:
  virtual ~Store() = default;
  virtual std::string describe() const = 0;
  // The whole desired state; an empty state (format "") when nothing was stored yet.
  virtual bool load(cv1::PersistedState& out, std::string& error) = 0;
  // Writes `st` as the new desired state. Only what differs from the last load/commit is
  // written, in one transaction that fails when someone else wrote since or this replica
  // no longer leads (error says which): then nothing is written.
  virtual bool commit(const cv1::PersistedState& st, std::string& error) = 0;
  // Whether the stored state changed since this replica's last load/commit (a follower asks
  // every 100 ms; etcd: answered from a watch on the state, read from etcd only without one).
  virtual bool changed_since_load() = 0;

  // Leadership. `on_change` is called from the store's own thread when this replica becomes
  // leader or stops leading. LocalStore: leader from start().
  virtual bool start(std::function<void(const Leadership&)> on_change, std::string& error) = 0;
  virtual void stop() = 0;
  virtual Leadership leadership() const = 0;
  // True while this replica holds a valid lease: checked before every push, so a leader
  // whose lease ran out (or may have: it was paused) stops pushing at once. Sets `term`.
  virtual bool may_push(uint64_t& term) const = 0;
  // Desired-state commits made and keys they wrote (puts and deletes), for the benchmark's
  // writes per change.
  struct Counters {
    uint64_t commits = 0, keys_written = 0;
  };
  virtual Counters counters() const = 0;
  // Shared with other replicas (etcd): only the leader writes, a follower reads.
  virtual bool replicated() const { return true; }
};

// The state file (--state FILE, or none for "").
std::unique_ptr<Store> make_local_store(const std::string& path, const std::string& id);

}  // namespace srv6gw::sr_controller
