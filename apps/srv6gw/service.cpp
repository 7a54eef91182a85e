// SPDX-License-Identifier: BSD-3-Clause
#include "service.hpp"

#include <systemd/sd-daemon.h>

#include <cstdint>

namespace srv6gw::app {

ServiceNotifier::ServiceNotifier() {
  uint64_t usec = 0;
  // > 0: WATCHDOG_USEC is set for this process (WatchdogSec= in the unit).
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
    watchdog_period_ = std::chrono::microseconds(usec / 2);
}

void ServiceNotifier::ready(const std::string& status) {
  sd_notify(0, ("READY=1\nSTATUS=" + status).c_str());
  next_pet_ = std::chrono::steady_clock::now();
}

void ServiceNotifier::tick(std::chrono::steady_clock::time_point now) {
  if (watchdog_period_.count() == 0 || now < next_pet_) return;
  sd_notify(0, "WATCHDOG=1");
  next_pet_ = now + watchdog_period_;
}

void ServiceNotifier::stopping() {
  sd_notify(0, "STOPPING=1");
}

}  // namespace srv6gw::app
