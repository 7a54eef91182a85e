// SPDX-License-Identifier: BSD-3-Clause
#include "gateway_client.hpp"

#include <fstream>
#include <sstream>

namespace srv6gw::sr_controller {
namespace {

bool read_pem(const std::string& path, std::string& out, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path;
    return false;
  }
  std::ostringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

}  // namespace

std::shared_ptr<grpc::Channel> make_channel(const cv1::GatewayEndpoint& ep, std::string& error) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // A restarted gateway is found again quickly: the default reconnect backoff grows to 120 s.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  // One channel per gateway even when targets repeat (tests run several on one host).
  args.SetString("srv6gw.gateway", ep.name());
  const std::string& t = ep.target();
  if (t.rfind("unix:", 0) == 0 || (!t.empty() && t[0] == '/')) {
    std::string where = t[0] == '/' ? "unix:" + t : t;
    // The request authority names the gateway (a unix socket has no host name); emulators
    // serving many gateways on one socket tell them apart by it.
    args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, ep.name());
    return grpc::CreateCustomChannel(where, grpc::InsecureChannelCredentials(), args);
  }
  if (ep.ca().empty()) {
    if (!ep.insecure()) {
      error = "gateway '" + ep.name() + "': TCP target " + t +
              " needs ca (TLS, with cert and key for mutual TLS) or insecure";
      return nullptr;
    }
    return grpc::CreateCustomChannel(t, grpc::InsecureChannelCredentials(), args);
  }
  grpc::SslCredentialsOptions ssl;
  if (!read_pem(ep.ca(), ssl.pem_root_certs, error)) return nullptr;
  if (ep.cert().empty() != ep.key().empty()) {
    error = "gateway '" + ep.name() + "': cert and key go together";
    return nullptr;
  }
  if (!ep.cert().empty()) {
    if (!read_pem(ep.cert(), ssl.pem_cert_chain, error)) return nullptr;
    if (!read_pem(ep.key(), ssl.pem_private_key, error)) return nullptr;
  }
  if (!ep.tls_server_name().empty()) args.SetSslTargetNameOverride(ep.tls_server_name());
  return grpc::CreateCustomChannel(t, grpc::SslCredentials(ssl), args);
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

const char* code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    default:
      return "ERROR";
  }
}

}  // namespace srv6gw::sr_controller
