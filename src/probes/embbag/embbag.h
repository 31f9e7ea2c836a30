/* The embbag probe's own tools, listed in its descriptor (embbag.c). */
#ifndef SDC_PROBES_EMBBAG_H
#define SDC_PROBES_EMBBAG_H

#include "command.h"

extern const struct sdc_command sdc_embbag_bench;    /* bench.c: sdcscan bench embbag */
extern const struct sdc_command sdc_embbag_campaign; /* campaign.c: sdcscan campaign embbag */

#endif
