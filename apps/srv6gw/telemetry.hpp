// SPDX-License-Identifier: BSD-3-Clause
// DPDK telemetry commands of the gateway, answered by the EAL telemetry thread:
//   /srv6gw/stats    totals, drops by reason, parse/decap statuses, both ports
//   /srv6gw/workers  per worker counters
//   /srv6gw/paths    per segment list, keyed by path id (optional parameter: a policy name)
//   /srv6gw/config   summary of the running configuration
// Read with: echo /srv6gw/stats | dpdk-telemetry.py -f PREFIX
#pragma once

namespace srv6gw::app {

struct App;

// Registers the commands (once per process). They answer from `app` while app.running is
// set; before and after, with an error. `app` must outlive the process's telemetry thread.
void register_telemetry(App& app);

}  // namespace srv6gw::app
