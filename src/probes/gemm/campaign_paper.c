/*
 * V-ABFT's published Tables 4 and 5, which campaign.c and campaign_gpu.c both print beside their
 * own (here below both: campaign.c calls campaign_gpu.c, never the reverse).
 */
#include "probes/gemm/gemm.h"

/* V-ABFT Tables 4 and 5: size, actual diff, A-ABFT tightness, V-ABFT threshold and tightness. */
const struct sdc_vabft_row sdc_vabft_t4[5] = { { 128, 1.27e-14, 164, 1.87e-13, 15 }, { 256, 3.64e-14, 161, 4.34e-13, 12 },
		 { 512, 1.04e-13, 160, 1.01e-12, 10 },	{ 1024, 2.95e-13, 159, 2.41e-12, 8 },
		 { 2048, 8.22e-13, 161, 5.96e-12, 7 } },
			   sdc_vabft_t5[5] = { { 128, 6.96e-6, 321, 9.19e-5, 13 }, { 256, 1.02e-5, 616, 2.09e-4, 20 },
		 { 512, 2.81e-5, 633, 4.93e-4, 18 },  { 1024, 1.57e-4, 321, 1.19e-3, 8 },
		 { 2048, 4.41e-4, 322, 2.94e-3, 7 } };
