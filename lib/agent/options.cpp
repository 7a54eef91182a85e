// SPDX-License-Identifier: BSD-3-Clause
#include "agent/options.hpp"

#include <charconv>

namespace srv6gw::agent {

bool take_agent_options(std::vector<std::string>& args, AgentOptions& o, std::string& error) {
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    std::string value;
    bool inline_value = false;
    if (a.rfind("--agent-", 0) == 0 || a == "--no-agent") {
      if (auto eq = a.find('='); eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        inline_value = true;
      }
    } else {
      rest.push_back(args[i]);
      continue;
    }
    auto take_value = [&]() -> bool {
      if (inline_value) return true;
      if (i + 1 >= args.size()) {
        error = a + " needs a value";
        return false;
      }
      value = args[++i];
      return true;
    };
    auto flag = [&]() -> bool {
      if (inline_value) {
        error = a + " takes no value";
        return false;
      }
      return true;
    };
    if (a == "--no-agent") {
      if (!flag()) return false;
      o.enabled = false;
    } else if (a == "--agent-insecure-tcp") {
      if (!flag()) return false;
      o.insecure_tcp = true;
    } else if (a == "--agent-listen") {
      if (!take_value()) return false;
      if (value.empty()) {
        error = "--agent-listen needs an address (unix:PATH or HOST:PORT)";
        return false;
      }
      o.listen = value;
    } else if (a == "--agent-tls-cert") {
      if (!take_value()) return false;
      o.tls_cert = value;
    } else if (a == "--agent-tls-key") {
      if (!take_value()) return false;
      o.tls_key = value;
    } else if (a == "--agent-tls-client-ca") {
      if (!take_value()) return false;
      o.tls_client_ca = value;
    } else if (a == "--agent-state") {
      if (!take_value()) return false;
      o.state_path = value == "none" ? "" : value;
    } else if (a == "--agent-max-message-mb") {
      if (!take_value()) return false;
      unsigned mb = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), mb);
      if (ec != std::errc() || p != value.data() + value.size() || mb < 4 || mb > 2047) {
        error = "--agent-max-message-mb must be 4..2047, not '" + value + "'";
        return false;
      }
      o.max_message_bytes = size_t(mb) << 20;
    } else {
      error = "unknown agent option " + a;
      return false;
    }
  }
  args = std::move(rest);
  return true;
}

std::string agent_usage() {
  return "gRPC agent:\n"
         "  --agent-listen ADDR        unix:PATH (default unix:/run/srv6gw/agent.sock) or\n"
         "                             HOST:PORT (TCP: needs mutual TLS, see below)\n"
         "  --agent-tls-cert FILE      server certificate chain (PEM) for TCP\n"
         "  --agent-tls-key FILE       server private key (PEM) for TCP\n"
         "  --agent-tls-client-ca FILE CA that client certificates must chain to (PEM)\n"
         "  --agent-insecure-tcp       allow plain TCP without TLS (lab only: anyone who can\n"
         "                             reach the port controls the gateway)\n"
         "  --agent-state FILE|none    applied state, restored at start\n"
         "                             (default /var/lib/srv6gw/state.json)\n"
         "  --agent-max-message-mb N   largest request/response (default 512)\n"
         "  --no-agent                 no gRPC agent\n";
}

bool is_unix_listen(const std::string& listen) {
  return listen.rfind("unix:", 0) == 0 || (!listen.empty() && listen[0] == '/');
}

std::string unix_socket_path(const std::string& listen) {
  if (listen.rfind("unix://", 0) == 0) return listen.substr(7);
  if (listen.rfind("unix:", 0) == 0) return listen.substr(5);
  if (!listen.empty() && listen[0] == '/') return listen;
  return "";
}

}  // namespace srv6gw::agent
