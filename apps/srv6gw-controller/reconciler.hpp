// SPDX-License-Identifier: BSD-3-Clause
// Keeps every gateway's running state equal to its desired state. For each gateway: read what
// runs (or use what the last successful push left, when nothing happened since), diff, push
// only the difference with Apply and expected_generation. A stale generation
// (FAILED_PRECONDITION) is re-read and retried at once; an unreachable gateway is retried
// with exponential backoff; a refusal (INVALID_ARGUMENT) is reported and not retried until
// its desired state changes. A bounded pool of threads serves all gateways, one pass per
// gateway at a time, so a slow or dead gateway holds one thread for at most one call
// timeout and never blocks the others.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "desired.hpp"
#include "gateway_client.hpp"

namespace srv6gw::sr_controller {

struct ReconcilerOptions {
  unsigned concurrency = 8;                      // passes in parallel
  std::chrono::milliseconds call_timeout{5000};  // per gRPC call
  std::chrono::milliseconds backoff_initial{100};
  std::chrono::milliseconds backoff_max{5000};
  unsigned stale_retries = 5;  // consecutive FAILED_PRECONDITION before backing off
  // A gateway in sync is read again after this long (drift made by someone else, a gateway
  // restarted without its state file). 0 = never (events and pokes only).
  std::chrono::milliseconds resync{30000};
  // Fencing (replicas on etcd): asked before every Apply; false = this replica may not push
  // (its lease ran out): the pass ends at once, nothing is sent. Sets the leader term the
  // push is stamped with (gRPC metadata srv6gw-controller-term). Unset: always allowed.
  std::function<bool(uint64_t& term)> may_push;
  // Fault injection for the fencing test only (--fault-push-delay-ms): a pause between the
  // leadership check and the Apply, the window a stalled or deposed leader pushes in.
  std::chrono::milliseconds fault_delay_before_apply{0};
};

using Clock = std::chrono::steady_clock;

// What one pass ended with, for the controller's events, logs and persisted state.
struct PassOutcome {
  enum class Kind { pushed, in_sync, stale, unreachable, refused, not_leader };
  Kind kind = Kind::in_sync;
  std::string gateway;
  uint64_t version = 0;       // desired version the pass worked for
  uint64_t generation = 0;    // gateway generation after it (pushed, in_sync)
  unsigned changes = 0;       // pushed
  double millis = 0;          // the pass, from its start
  uint64_t done_unix_ns = 0;  // when it ended (the Apply's answer for a push)
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string message;
};

const char* kind_name(PassOutcome::Kind k);

struct GatewayReport {
  std::string name;
  uint64_t desired_version = 0;
  uint64_t synced_version = 0;
  uint64_t generation = 0;
  bool in_sync = false;
  bool reachable = false;
  std::string last_error;
  uint64_t pushes = 0, push_failures = 0, stale_retries = 0, unreachable = 0, reconciles = 0,
           changes_pushed = 0;
  double lag_ms = 0, last_push_ms = 0;
  std::shared_ptr<const GatewayState> desired;
};

class Reconciler {
 public:
  using Observer = std::function<void(const PassOutcome&)>;
  // `observer` is called after every pass, from a pass thread, without locks held.
  Reconciler(ReconcilerOptions options, Observer observer);
  ~Reconciler();  // stop()
  Reconciler(const Reconciler&) = delete;
  Reconciler& operator=(const Reconciler&) = delete;

  void add_gateway(const std::string& name, std::shared_ptr<grpc::Channel> channel);
  // New desired state of a gateway, at plan `version` (increasing). The gateway is
  // reconciled soon; a gateway refusing an earlier version is tried again.
  void set_desired(const std::string& name, std::shared_ptr<const GatewayState> desired,
                   uint64_t version);
  // Something happened on the gateway (a configuration change by someone else, a new event
  // stream after a restart): forget what we think runs there and reconcile now.
  void poke(const std::string& name);
  void poke_all();
  // Passes run only while active (a replica that leads). Inactive: desired states are kept
  // (GetPlan shows them) but nothing is read or pushed.
  void set_active(bool active);

  std::vector<GatewayReport> report() const;
  std::optional<GatewayReport> report(const std::string& name) const;
  // True once every gateway runs a desired version >= `version` (or `timeout` passes).
  bool wait_synced(uint64_t version, std::chrono::milliseconds timeout) const;
  void stop();

 private:
  struct Gateway;
  void run();
  void pass(Gateway& g);
  Gateway* pick_locked(Clock::time_point now, Clock::time_point& next_due);

  ReconcilerOptions options_;
  Observer observer_;
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;         // work for the pass threads
  mutable std::condition_variable synced_cv_;  // a pass ended (wait_synced)
  std::map<std::string, std::unique_ptr<Gateway>> gateways_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
  bool active_ = true;
};

}  // namespace srv6gw::sr_controller
