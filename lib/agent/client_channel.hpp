// SPDX-License-Identifier: BSD-3-Clause
// The client side of the gateway's gRPC API (srv6gw.v1), shared by srv6gw-ctl and
// srv6gw-controller: how a channel to an agent is made, and how a call's status is named.
// gRPC only (no DPDK, no libyang).
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <string_view>

namespace srv6gw::agent {

struct ChannelTarget {
  std::string target;           // "unix:PATH", an absolute socket path, or "HOST:PORT"
  std::string ca;               // PEM CA file: TLS over TCP; empty: plain TCP if `insecure`
  std::string cert, key;        // PEM client certificate and key (mutual TLS); both or neither
  std::string tls_server_name;  // name the server certificate is checked against, if set
  bool insecure = false;        // plain TCP allowed (no ca)
};

// Reads the PEM file `path` into `out`; false and `error` ("cannot read PATH") otherwise.
bool read_pem(const std::string& path, std::string& out, std::string& error);

// True for "unix:PATH" and absolute paths.
bool is_unix_target(std::string_view target);

// A channel to `t`: a unix socket without transport security; TCP with TLS (t.ca, and
// t.cert/t.key for mutual TLS) or, with t.insecure, plain TCP. Messages are unlimited in
// size (a whole configuration can be one Apply). `args` carries the caller's other channel
// arguments. Returns null and sets `error` when a PEM file cannot be read, cert and key are
// not given together, or TCP has neither ca nor insecure.
std::shared_ptr<grpc::Channel> make_client_channel(const ChannelTarget& t,
                                                   grpc::ChannelArguments args, std::string& error);

// The status code's name as gRPC spells it ("INVALID_ARGUMENT"); "ERROR" for a value that
// is no code.
std::string status_code_name(grpc::StatusCode code);

}  // namespace srv6gw::agent
