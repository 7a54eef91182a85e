// SPDX-License-Identifier: BSD-3-Clause
// Which links failed, from the gateways' probe verdicts: a path whose probes went down
// crosses at least one dead link; a path whose probes still come back crosses none. Pure.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace srv6gw::sr_controller {

struct ProbedPath {
  std::string gateway;
  uint32_t path_id = 0;
  std::vector<std::string> links;  // links it crosses (both directions: the reply returns
                                   // over the same links)
  bool down = false;
};

struct LinkInference {
  // Links taken for dead. Links no probe can tell apart (every probed path crosses both or
  // neither, e.g. the two links of one spine in a 2-leaf fabric) are taken down together.
  std::set<std::string> down;
  // Down paths that every crossed link is proven alive by another path: not explained by a
  // link failure (the remote gateway, a one-way fault); reported, nothing taken down.
  std::vector<std::string> unexplained;  // "gateway/path-id"
  bool ambiguous = false;                // some group taken down had more than one link
};

// Greedy minimum explanation: candidate links are those of down paths that no up path
// crosses; links hitting exactly the same down paths form one group; the group hitting the
// most still-unexplained down paths is taken down, until every down path is explained.
LinkInference infer_failed_links(const std::vector<ProbedPath>& paths);

}  // namespace srv6gw::sr_controller
