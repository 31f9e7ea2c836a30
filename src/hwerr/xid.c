/*
 * What an NVIDIA Xid during a run means for the verdict (hwerr/hwerr.h), from NVIDIA's Xid
 * documentation (docs.nvidia.com/deploy/xid-errors/): its "Xid Error Listing" table marks each
 * Xid's possible causes (hardware error, driver error, user application error, system memory
 * corruption, bus error, thermal issue, frame buffer corrupted) and its sections say what to do;
 * the catalog for Ampere and later (xid-errors/analyzing-xid-catalog.html) gives each a resolution
 * (RESTART_APP, RESET_GPU, CONTACT_SUPPORT, ...); NVIDIA's A100 memory error management guide
 * (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/) explains 94 and 95.
 *
 * The rule:
 *  - CRITICAL where the documentation names the GPU's hardware alone: memory it could not
 *    correct, retired or failed to remap, a GPU gone from its bus, a failed NVLink.
 *  - WARNING where the hardware corrected what it found but says it is wearing (92).
 *  - UNKNOWN where an application or the driver are named beside the hardware: the GPU's work
 *    in this run was disturbed, so the run cannot vouch for it, but no hardware fault is named.
 *    An Xid not in the table is UNKNOWN too.
 */
#include "hwerr/hwerr.h"

#include "base/macros.h"

struct xid_class {
	unsigned xid;
	enum sdc_finding_class cls;
	const char *name, *why;
};

static const struct xid_class xids[] = {
	{ 13, SDC_FINDING_ERROR, "Graphics Engine Exception",
	  "NVIDIA lists an application's out-of-range access or illegal instruction first, a driver or hardware fault "
	  "after: the GPU's work was disturbed" },
	{ 31, SDC_FINDING_ERROR, "GPU memory page fault",
	  "an MMU fault: typically an application's illegal address, can also be a driver or hardware bug (NVIDIA)" },
	{ 32, SDC_FINDING_ERROR, "Invalid or corrupted push buffer stream",
	  "NVIDIA lists driver error, system memory or bus corruption: the commands sent to the GPU were bad" },
	{ 43, SDC_FINDING_ERROR, "GPU stopped processing",
	  "an application hit a software-induced fault and was stopped; NVIDIA: the GPU remains healthy" },
	{ 45, SDC_FINDING_ERROR, "Preemptive cleanup, due to previous errors",
	  "channels stopped because of another failure (NVIDIA: informative); that failure is its own Xid" },
	{ 48, SDC_FINDING_CORRUPTION, "Double Bit ECC Error",
	  "an uncorrectable memory error (DBE): a hardware error; NVIDIA: reset the GPU or reboot" },
	{ 61, SDC_FINDING_DEGRADED, "Internal micro-controller breakpoint/warning",
	  "the GPU's internal micro-controller warned; NVIDIA lists hardware and driver causes, no reset needed" },
	{ 62, SDC_FINDING_ERROR, "Internal micro-controller halt",
	  "the GPU's internal micro-controller halted; NVIDIA lists hardware, driver and thermal causes; reset the GPU" },
	{ 63, SDC_FINDING_CORRUPTION, "ECC page retirement or row remapping recording event",
	  "a page of the GPU's memory was retired or a row marked for remapping after memory errors: a hardware error" },
	{ 64, SDC_FINDING_CORRUPTION, "ECC page retirement or row remapper recording failure",
	  "the GPU could not retire a failing page or remap a failing row of its memory: a hardware error" },
	{ 68, SDC_FINDING_ERROR, "NVDEC0 Exception",
	  "a video decoder exception; NVIDIA lists hardware and driver causes" },
	{ 69, SDC_FINDING_ERROR, "Graphics Engine class error",
	  "NVIDIA lists hardware and driver causes: the GPU's work was disturbed" },
	{ 74, SDC_FINDING_CORRUPTION, "NVLINK Error",
	  "a fault on an NVLink connection to another GPU or an NVSwitch: a hardware or bus error; NVIDIA: reset the GPU" },
	{ 79, SDC_FINDING_CORRUPTION, "GPU has fallen off the bus",
	  "the GPU cannot be reached over PCIe, most often a hardware failure of the link (NVIDIA)" },
	{ 92, SDC_FINDING_DEGRADED, "High single-bit ECC error rate",
	  "the GPU corrected single-bit memory errors at a high rate: corrected, but a sign of wear" },
	{ 94, SDC_FINDING_CORRUPTION, "Contained ECC error",
	  "an uncorrectable memory error, contained to the application that touched it; reset the GPU to remap the row" },
	{ 95, SDC_FINDING_CORRUPTION, "Uncontained ECC error",
	  "an uncorrectable memory error that could not be contained: every application on the GPU is affected" },
	{ 119, SDC_FINDING_ERROR, "GSP RPC Timeout",
	  "the GPU System Processor did not answer the driver; NVIDIA lists hardware and driver causes; reset the GPU" },
	{ 120, SDC_FINDING_ERROR, "GSP Error",
	  "the GPU System Processor failed; NVIDIA lists hardware and driver causes; reset the GPU" },
};

enum sdc_finding_class sdc_xid_class(unsigned long long xid, const char **name, const char **why)
{
	for (size_t i = 0; i < SDC_ARRAY_SIZE(xids); i++) {
		if (xids[i].xid == xid) {
			*name = xids[i].name;
			*why = xids[i].why;
			return xids[i].cls;
		}
	}
	*name = xid == 999 ? "an Xid NVML does not know" : "an Xid sdcscan does not class";
	*why = "see NVIDIA's Xid catalog; the GPU's work may have been disturbed";
	return SDC_FINDING_ERROR;
}
