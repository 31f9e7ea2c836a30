/* The generic commands (one file each here); a probe's own tools are in its folder, reached through the registry. */
#ifndef SDC_COMMANDS_H
#define SDC_COMMANDS_H

#include "probe/command.h"

extern const struct sdc_command sdc_command_run;
extern const struct sdc_command sdc_command_list;
extern const struct sdc_command sdc_command_selftest;
extern const struct sdc_command sdc_command_golden;
extern const struct sdc_command sdc_command_bench;
extern const struct sdc_command sdc_command_calibrate;
extern const struct sdc_command sdc_command_campaign;
extern const struct sdc_command sdc_command_campaign_cpu; /* campaign cpu-faults: campaign_cpu.c */
extern const struct sdc_command sdc_command_version;
extern const struct sdc_command sdc_command_status;
extern const struct sdc_command sdc_command_clear;
extern const struct sdc_command sdc_command_fleet;
extern const struct sdc_command sdc_command_bench_fleet; /* bench fleet: fleet_bench.c */

#endif
