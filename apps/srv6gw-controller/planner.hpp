// SPDX-License-Identifier: BSD-3-Clause
// What the controller asks of the path algorithm module: from the topology, the links' state
// and the jobs, every gateway's desired objects and every path with the links it crosses.
// planner_pathalg.cpp implements it with lib/pathalg.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "desired.hpp"
#include "srv6gw/controller/v1/controller.pb.h"

namespace srv6gw::sr_controller {

namespace cv1 = ::srv6gw::controller::v1;

// One segment list of one gateway's policy and the links it crosses.
struct PlannedPath {
  std::string gateway;
  std::string policy;
  std::string segment_list;
  uint32_t path_id = 0;
  std::vector<std::string> links;
  bool probed = false;  // the policy names a probe SID: the gateway reports its state
};

struct PlanOutput {
  std::map<std::string, GatewayState> gateways;  // every managed gateway, even empty
  std::vector<PlannedPath> paths;
  std::map<std::string, cv1::JobSummary> jobs;  // by job id
};

struct LinkState {
  bool up = true;
  double capacity_gbps = 0;
};

class Planner {
 public:
  virtual ~Planner() = default;
  // Content hash of the topology (persisted: a restart notices a new topology file).
  virtual std::string topology_version() const = 0;
  virtual std::vector<std::string> gateways() const = 0;
  // Agent endpoints the topology names, by gateway ("" or absent: none).
  virtual std::map<std::string, std::string> agents() const = 0;
  // Every link of the topology with its state as the file gives it.
  virtual std::map<std::string, LinkState> links() const = 0;
  // Links with a host at one end (a gateway's access link).
  virtual std::set<std::string> access_links() const = 0;
  // Why a job cannot be placed ("" = it can): unknown host, no flow, ...
  virtual std::string check_job(const cv1::SubmitJobRequest& job) const = 0;
  // The whole plan for `links` (state in force) and `jobs`. A job is placed the first time
  // it is seen (on the links in force then) and keeps its paths afterwards; a pinned flow
  // whose path is down falls back to its destination's multipath policy. `probe`: gateways
  // told to probe (true) or not (false); others as the topology says. False with `error`
  // when impossible.
  virtual bool compute(const std::map<std::string, LinkState>& links,
                       const std::vector<cv1::SubmitJobRequest>& jobs,
                       const std::map<std::string, bool>& probe, PlanOutput& out,
                       std::string& error) = 0;
};

}  // namespace srv6gw::sr_controller

namespace srv6gw::sr_controller {
// The path algorithm module's planner over a topology file (planner_pathalg.cpp). Null with
// `error` (naming the offending node) when the file is refused.
std::unique_ptr<Planner> load_topology_planner(const std::string& topology_path,
                                               std::string& error);
}  // namespace srv6gw::sr_controller
