/* Time: monotonic and wall-clock seconds, and RFC 3339 text. */
#ifndef SDC_BASE_CLOCK_H
#define SDC_BASE_CLOCK_H

#include <stddef.h>

#include "base/macros.h"

/* Monotonic seconds, and wall-clock seconds since the epoch. */
double sdc_now(void);
double sdc_wall_now(void);
/* Formats an epoch time as RFC 3339 UTC ("2026-11-21T19:24:00Z"). */
void sdc_format_utc(double epoch, char *buf, size_t len);

#endif
