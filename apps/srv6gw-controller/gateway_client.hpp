// SPDX-License-Identifier: BSD-3-Clause
// One managed gateway's agent, as a gRPC client: the channel (unix socket, or TCP with mutual
// TLS like srv6gw-ctl), reading its whole managed state, and Apply.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "agent/client_channel.hpp"
#include "desired.hpp"
#include "srv6gw/controller/v1/controller.pb.h"
#include "srv6gw/v1/srv6gw.grpc.pb.h"

namespace srv6gw::sr_controller {

namespace cv1 = ::srv6gw::controller::v1;

// A channel to `ep.target`: "unix:PATH" (or an absolute path) without transport security;
// "HOST:PORT" with TLS (ep.ca, and ep.cert/ep.key for mutual TLS) or, with ep.insecure,
// plain TCP (agent::make_client_channel), with a short reconnect backoff and, on a unix
// socket, the gateway's name as authority. Returns null and sets `error` (naming the
// gateway) when a PEM file cannot be read or the endpoint asks for TCP without either.
std::shared_ptr<grpc::Channel> make_channel(const cv1::GatewayEndpoint& ep, std::string& error);

// The gateway's running state as one read: GetState's generation, then every page of
// ListPolicies, ListSteering and ListLocalSids. The pages may straddle a change made
// meanwhile: `consistent` is false when a page reported another generation than GetState
// (the caller then reads again, or relies on expected_generation to refuse its push).
struct RunningState {
  uint64_t generation = 0;
  bool consistent = true;
  GatewayState objects;
};

class GatewayClient {
 public:
  GatewayClient(std::string name, std::shared_ptr<grpc::Channel> channel,
                std::chrono::milliseconds call_timeout);
  const std::string& name() const { return name_; }
  grpc::Channel& channel() { return *channel_; }
  v1::Gateway::Stub& stub() { return *stub_; }

  grpc::Status get_generation(uint64_t& generation);
  grpc::Status read(RunningState& out);
  // `term` and `plan_version` travel as gRPC metadata (srv6gw-controller-term,
  // srv6gw-plan-version): the gateway's logs and the stand-in agent tell leaders apart.
  grpc::Status apply(const v1::ApplyRequest& request, v1::ApplyResponse& response,
                     uint64_t term = 0, uint64_t plan_version = 0);

 private:
  void deadline(grpc::ClientContext& ctx) const;
  std::string name_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Gateway::Stub> stub_;
  std::chrono::milliseconds call_timeout_;
};

using agent::status_code_name;

}  // namespace srv6gw::sr_controller
