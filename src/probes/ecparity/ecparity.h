/* The ecparity probe's tools (its folder's own header). */
#ifndef SDC_PROBES_ECPARITY_H
#define SDC_PROBES_ECPARITY_H

struct sdc_command;
extern const struct sdc_command sdc_ecparity_bench;

#endif
