// SPDX-License-Identifier: BSD-3-Clause
// The global SR engine: holds the topology (through a Planner), link state, jobs and the plan;
// keeps every gateway on the plan (Reconciler); watches every gateway's events and infers
// failed links from its probes; persists its own state; serves srv6gw.controller.v1.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "inference.hpp"
#include "planner.hpp"
#include "reconciler.hpp"
#include "srv6gw/controller/v1/controller.grpc.pb.h"
#include "store.hpp"

namespace srv6gw::sr_controller {

// Fan-out of the controller's events to Watch streams: bounded queues, producers never wait.
class EventHub {
 public:
  struct Subscriber {
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<cv1::ControllerEvent> queue;
    bool closed = false;
  };
  std::shared_ptr<Subscriber> subscribe();
  void unsubscribe(const std::shared_ptr<Subscriber>& s);
  void publish(cv1::ControllerEvent ev);
  void close_all();
  // Last events, for tests and `ctl events`.
  std::vector<cv1::ControllerEvent> recent() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<Subscriber>> subs_;
  std::deque<cv1::ControllerEvent> recent_;
  uint64_t sequence_ = 0;
};

struct ControllerOptions {
  std::string state_path;  // "" = not persisted (local store only)
  // Where the desired state lives and who leads: null = the local store over state_path.
  std::shared_ptr<Store> store;
  std::string id;  // this replica's name (logs, leader record)
  ReconcilerOptions reconcile;
  bool watch = true;  // subscribe to every gateway's WatchEvents
  std::chrono::milliseconds watch_retry{500};
};

class Controller {
 public:
  // Loads the persisted state (when the file exists), connects to the gateways. Null with
  // `error` when an endpoint is unusable or the state file is unreadable.
  static std::unique_ptr<Controller> create(ControllerOptions options,
                                            std::unique_ptr<Planner> planner,
                                            const cv1::ControllerConfig& config,
                                            std::string& error);
  ~Controller();  // stop()

  // Computes the plan and starts reconciling and watching.
  bool start(std::string& error);
  void stop();

  grpc::Status submit_job(const cv1::SubmitJobRequest& req, cv1::SubmitJobResponse& resp);
  grpc::Status cancel_job(const cv1::CancelJobRequest& req, cv1::CancelJobResponse& resp);
  grpc::Status set_link_state(const cv1::SetLinkStateRequest& req, cv1::SetLinkStateResponse& resp);
  void get_plan(const cv1::GetPlanRequest& req, cv1::Plan& plan) const;

  // A gateway's event (its WatchEvents stream; tests may call it directly).
  void on_gateway_event(const std::string& gateway, const v1::Event& ev);

  EventHub& events() { return events_; }
  Reconciler& reconciler() { return *reconciler_; }
  uint64_t plan_version() const;
  // Links taken down from probe verdicts.
  std::set<std::string> inferred_down() const;
  bool acting_leader() const { return acting_leader_.load(); }
  Store& store() { return *store_; }

 private:
  Controller(ControllerOptions options, std::unique_ptr<Planner> planner);
  bool replan_locked(const std::string& why, std::vector<std::string>* changed, std::string& error);
  std::map<std::string, LinkState> links_in_force_locked(bool with_inferred) const;
  bool update_inference_locked();
  void persist_locked();
  bool load_state(std::string& error);
  bool apply_loaded_locked(const cv1::PersistedState& st, std::string& error);
  cv1::PersistedState state_locked(uint64_t plan_version) const;
  grpc::Status not_leader_status() const;
  void role_loop();
  void take_over();
  void follow();
  void on_pass(const PassOutcome& o);
  void watch_loop(const std::string& gateway, std::shared_ptr<grpc::Channel> channel);
  void publish(cv1::ControllerEventKind kind, const std::string& gateway, const std::string& link,
               const std::string& detail, uint64_t generation = 0, uint64_t time_unix_ns = 0);

  ControllerOptions options_;
  std::unique_ptr<Planner> planner_;
  std::unique_ptr<Reconciler> reconciler_;
  EventHub events_;

  mutable std::mutex mutex_;  // everything below
  std::map<std::string, LinkState> topology_links_;
  std::set<std::string> access_links_;                // host <-> leaf: never inferred down
  std::map<std::string, cv1::LinkStatus> overrides_;  // operator (SetLinkState)
  std::set<std::string> inferred_down_;               // from probe verdicts
  std::string inference_detail_;
  // (gateway, path id) -> down, as the gateway's PATH_STATE events (probe-down/up) said.
  std::map<std::pair<std::string, uint32_t>, bool> probe_down_;
  std::vector<cv1::SubmitJobRequest> jobs_;
  std::map<std::string, bool> probe_;  // per gateway, when the endpoint says
  PlanOutput plan_;
  std::atomic<uint64_t> plan_version_{0};  // written under mutex_, read by publish()
  uint64_t next_job_number_ = 1;
  std::string persisted_topology_version_;
  std::map<std::string, uint64_t> synced_generation_;
  std::map<std::string, bool> watching_;
  std::map<std::string, std::string> targets_;
  // Plan version at which each gateway's desired state last changed (stored per gateway:
  // a change writes only the gateways it changes).
  std::map<std::string, uint64_t> desired_changed_;

  std::shared_ptr<Store> store_;
  std::atomic<bool> acting_leader_{false};  // the role thread writes
  bool store_refused_ = false;              // under mutex_: the last replan was not stored
  std::thread role_thread_;

  struct Watcher {
    std::thread thread;
    std::mutex mutex;
    grpc::ClientContext* ctx = nullptr;
  };
  std::map<std::string, std::unique_ptr<Watcher>> watchers_;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;
  std::atomic<bool> stopping_{false};
  bool started_ = false;  // under mutex_
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
};

// srv6gw.controller.v1.Controller over a Controller.
class ControllerService final : public cv1::Controller::Service {
 public:
  explicit ControllerService(Controller& c) : c_(c) {}
  grpc::Status SubmitJob(grpc::ServerContext*, const cv1::SubmitJobRequest* req,
                         cv1::SubmitJobResponse* resp) override;
  grpc::Status CancelJob(grpc::ServerContext*, const cv1::CancelJobRequest* req,
                         cv1::CancelJobResponse* resp) override;
  grpc::Status GetPlan(grpc::ServerContext*, const cv1::GetPlanRequest* req,
                       cv1::Plan* resp) override;
  grpc::Status SetLinkState(grpc::ServerContext*, const cv1::SetLinkStateRequest* req,
                            cv1::SetLinkStateResponse* resp) override;
  grpc::Status Watch(grpc::ServerContext* ctx, const cv1::WatchRequest* req,
                     grpc::ServerWriter<cv1::ControllerEvent>* writer) override;

 private:
  Controller& c_;
};

}  // namespace srv6gw::sr_controller
