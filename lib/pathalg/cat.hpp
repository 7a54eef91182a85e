// SPDX-License-Identifier: BSD-3-Clause
// String concatenation for lib/pathalg's error messages and YANG paths.
#pragma once

#include <string>

namespace srv6gw::pathalg {

// Concatenation by appending: GCC 12's -Wrestrict misfires on "literal" + std::string.
template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::string s;
  (s += ... += parts);
  return s;
}

}  // namespace srv6gw::pathalg
