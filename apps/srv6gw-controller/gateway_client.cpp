// SPDX-License-Identifier: BSD-3-Clause
#include "gateway_client.hpp"

namespace srv6gw::sr_controller {

std::shared_ptr<grpc::Channel> make_channel(const cv1::GatewayEndpoint& ep, std::string& error) {
  grpc::ChannelArguments args;
  // A restarted gateway is found again quickly: the default reconnect backoff grows to 120 s.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  // One channel per gateway even when targets repeat (tests run several on one host).
  args.SetString("srv6gw.gateway", ep.name());
  if (agent::is_unix_target(ep.target())) {
    // The request authority names the gateway (a unix socket has no host name); emulators
    // serving many gateways on one socket tell them apart by it.
    args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, ep.name());
  }
  agent::ChannelTarget t{ep.target(),          ep.ca(),      ep.cert(), ep.key(),
                         ep.tls_server_name(), ep.insecure()};
  auto channel = agent::make_client_channel(t, args, error);
  if (!channel) error = "gateway '" + ep.name() + "': " + error;
  return channel;
}

GatewayClient::GatewayClient(std::string name, std::shared_ptr<grpc::Channel> channel,
                             std::chrono::milliseconds call_timeout)
    : name_(std::move(name)),
      channel_(std::move(channel)),
      stub_(v1::Gateway::NewStub(channel_)),
      call_timeout_(call_timeout) {}

void GatewayClient::deadline(grpc::ClientContext& ctx) const {
  ctx.set_deadline(std::chrono::system_clock::now() + call_timeout_);
}

grpc::Status GatewayClient::get_generation(uint64_t& generation) {
  grpc::ClientContext ctx;
  deadline(ctx);
  v1::GetStateRequest req;
  v1::GetStateResponse resp;
  auto st = stub_->GetState(&ctx, req, &resp);
  if (st.ok()) generation = resp.generation();
  return st;
}

grpc::Status GatewayClient::read(RunningState& out) {
  out = RunningState{};
  if (auto st = get_generation(out.generation); !st.ok()) return st;
  std::string token;
  do {
    grpc::ClientContext ctx;
    deadline(ctx);
    v1::ListPoliciesRequest req;
    req.set_page_size(10000);
    req.set_page_token(token);
    v1::ListPoliciesResponse resp;
    if (auto st = stub_->ListPolicies(&ctx, req, &resp); !st.ok()) return st;
    if (resp.generation() != out.generation) out.consistent = false;
    for (auto& p : *resp.mutable_policies()) out.objects.add(std::move(p));
    token = resp.next_page_token();
  } while (!token.empty());
  do {
    grpc::ClientContext ctx;
    deadline(ctx);
    v1::ListSteeringRequest req;
    req.set_page_size(10000);
    req.set_page_token(token);
    v1::ListSteeringResponse resp;
    if (auto st = stub_->ListSteering(&ctx, req, &resp); !st.ok()) return st;
    if (resp.generation() != out.generation) out.consistent = false;
    for (auto& r : *resp.mutable_rules()) out.objects.add(std::move(r));
    token = resp.next_page_token();
  } while (!token.empty());
  do {
    grpc::ClientContext ctx;
    deadline(ctx);
    v1::ListLocalSidsRequest req;
    req.set_page_size(10000);
    req.set_page_token(token);
    v1::ListLocalSidsResponse resp;
    if (auto st = stub_->ListLocalSids(&ctx, req, &resp); !st.ok()) return st;
    if (resp.generation() != out.generation) out.consistent = false;
    for (auto& s : *resp.mutable_local_sids()) out.objects.add(std::move(s));
    token = resp.next_page_token();
  } while (!token.empty());
  return grpc::Status::OK;
}

grpc::Status GatewayClient::apply(const v1::ApplyRequest& request, v1::ApplyResponse& response,
                                  uint64_t term, uint64_t plan_version) {
  grpc::ClientContext ctx;
  deadline(ctx);
  ctx.AddMetadata("srv6gw-controller-term", std::to_string(term));
  ctx.AddMetadata("srv6gw-plan-version", std::to_string(plan_version));
  return stub_->Apply(&ctx, request, &response);
}

}  // namespace srv6gw::sr_controller
