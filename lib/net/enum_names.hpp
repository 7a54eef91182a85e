// SPDX-License-Identifier: BSD-3-Clause
// One list per set of names. A set is written once as LIST(X), one X(member, "name") per
// entry; SRV6GW_ENUM_MEMBERS(LIST) expands it into the enum's members and
// SRV6GW_ENUM_NAMES(LIST) into the table of names the counters, the stats JSON, telemetry
// and the gRPC conversion iterate. Adding an entry touches one line.
//
// An enum whose members are defined elsewhere (the configuration's YANG names of srv6's
// EncapMode) gets a table of {member, name} pairs instead; enum_name and parse_enum take
// either kind of table.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// The member whose name is `text`, if any.
template <class Enum, size_t N>
constexpr std::optional<Enum> parse_enum(const std::array<const char*, N>& names,
                                         std::string_view text) {
  for (size_t i = 0; i < N; ++i) {
    if (text == names[i]) return Enum(i);
  }
  return std::nullopt;
}

// A {member, name} table entry, for enums whose members are defined apart from the names.
template <class Enum>
struct EnumName {
  Enum member;
  const char* name;
};

template <class Enum, size_t N>
constexpr const char* enum_name(const std::array<EnumName<Enum>, N>& names, Enum e) {
  for (const auto& n : names) {
    if (n.member == e) return n.name;
  }
  return "unknown";
}

template <class Enum, size_t N>
constexpr std::optional<Enum> parse_enum(const std::array<EnumName<Enum>, N>& names,
                                         std::string_view text) {
  for (const auto& n : names) {
    if (text == n.name) return n.member;
  }
  return std::nullopt;
}

// Every name of a table, in order (command-line choices, help texts).
template <size_t N>
std::vector<std::string> all_names(const std::array<const char*, N>& names) {
  return {names.begin(), names.end()};
}
template <class Enum, size_t N>
std::vector<std::string> all_names(const std::array<EnumName<Enum>, N>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) out.emplace_back(n.name);
  return out;
}

}  // namespace srv6gw::net
