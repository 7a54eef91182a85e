// SPDX-License-Identifier: BSD-3-Clause
#include "pathalg/segments.hpp"
