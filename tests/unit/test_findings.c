/*
 * The selftest matcher: a finding locates an injected fault only at its probe, variant, device,
 * iteration, buffer, element and bit; a finding anywhere else is a false alarm, not a match.
 * (Were it looser, selftest would count a detector that points at the wrong element as working.)
 */
#include <string.h>

#include "check.h"
#include "run/record.h"

static struct sdc_injection injection(void)
{
	struct sdc_injection in;
	memset(&in, 0, sizeof(in));
	strcpy(in.probe, "gemm");
	strcpy(in.variant, "int8-256x256x1024");
	strcpy(in.target, "C");
	in.device = 1;
	in.iteration = 7;
	in.row = 12;
	in.col = 34;
	in.bit = 9;
	return in;
}

/* The finding a working detector makes of that fault: bit 9 set in its XOR mask. */
static struct sdc_finding finding(void)
{
	struct sdc_finding f;
	memset(&f, 0, sizeof(f));
	f.cls = SDC_FINDING_CORRUPTION;
	strcpy(f.probe, "gemm");
	strcpy(f.variant, "int8-256x256x1024");
	strcpy(f.kind, "checksum-mismatch");
	strcpy(f.target, "C");
	f.device = 1;
	f.iteration = 7;
	f.row = 12;
	f.col = 34;
	strcpy(f.xor_mask, "0x00000200");
	return f;
}

int main(void)
{
	const struct sdc_injection in = injection();
	struct sdc_finding f = finding();
	CHECK(sdc_finding_locates(&f, &in));
	CHECK(sdc_finding_at(&f, &in));
	/* a mask with more bits than the one flipped still holds it (a wider upset, or rounding) */
	strcpy(f.xor_mask, "0x00000300");
	CHECK(sdc_finding_locates(&f, &in));

	/* Each coordinate wrong on its own: no longer a match. */
	static const char *const wrong[] = { "row", "col", "bit", "target", "iteration", "device", "variant", "probe",
					     "class" };
	for (size_t k = 0; k < sizeof(wrong) / sizeof(wrong[0]); k++) {
		f = finding();
		switch (k) {
		case 0: f.row = 13; break;
		case 1: f.col = 33; break;
		case 2: strcpy(f.xor_mask, "0x00000100"); break; /* bit 8, not 9 */
		case 3: strcpy(f.target, "B"); break;
		case 4: f.iteration = 8; break;
		case 5: f.device = 0; break;
		case 6: strcpy(f.variant, "int8-128x128x256"); break;
		case 7: strcpy(f.probe, "embbag"); break;
		case 8: f.cls = SDC_FINDING_DEGRADED; break;
		}
		CHECK_MSG(!sdc_finding_locates(&f, &in), "a finding at the wrong %s locates the fault", wrong[k]);
	}
	/* In the same place but another element: explained (no false alarm), not located. */
	f = finding();
	f.row = 0;
	CHECK(sdc_finding_at(&f, &in) && !sdc_finding_locates(&f, &in));
	/* A host-wide finding (device -1) is at any device's fault, but locates none by element. */
	f = finding();
	f.device = -1;
	f.row = f.col = -1;
	CHECK(sdc_finding_at(&f, &in) && !sdc_finding_locates(&f, &in));
	/* Another iteration is neither. */
	f = finding();
	f.iteration = 6;
	CHECK(!sdc_finding_at(&f, &in));
	/* Bits above 63 are never located (the mask holds 64). */
	struct sdc_injection wide = in;
	wide.bit = 64;
	f = finding();
	strcpy(f.xor_mask, "0xffffffffffffffff");
	CHECK(!sdc_finding_locates(&f, &wide));
	return check_done("test_findings");
}
