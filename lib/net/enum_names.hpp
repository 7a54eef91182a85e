// SPDX-License-Identifier: BSD-3-Clause
// One list per set of names. A set is written once as LIST(X), one X(member, "name") per
// entry; SRV6GW_ENUM_MEMBERS(LIST) expands it into the enum's members and
// SRV6GW_ENUM_NAMES(LIST) into the table of names the counters, the stats JSON, telemetry
// and the gRPC conversion iterate. Adding an entry touches one line.
#pragma once

#include <array>
#include <cstddef>

#define SRV6GW_ENUM_MEMBER_(member, name) member,
#define SRV6GW_ENUM_NAME_(member, name) name,
#define SRV6GW_ENUM_MEMBERS(LIST) LIST(SRV6GW_ENUM_MEMBER_)
#define SRV6GW_ENUM_NAMES(LIST) \
  std::array {                  \
    LIST(SRV6GW_ENUM_NAME_)     \
  }

namespace srv6gw::net {

// names[e], or "unknown" for a value outside the list.
template <class Enum, size_t N>
constexpr const char* enum_name(const std::array<const char*, N>& names, Enum e) {
  return size_t(e) < N ? names[size_t(e)] : "unknown";
}

}  // namespace srv6gw::net
