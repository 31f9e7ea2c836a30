/*
 * The host-side bookkeeping of the GPU module's no-wait rule (src/kernels/cuda/cuda_util.cu,
 * cuda_util.h), without a GPU: a GPU marked hung refuses new work and gets nothing back for reuse
 * (its pinned staging and library handles are left where they are: a copy or kernel stuck there
 * may still write them); pinned staging given back is reused (best fit) instead of being freed; a
 * copy helper refuses to run past its staging's end; a workspace is refused on a thread with no GPU.
 * Built from the module's own objects (tests/meson.build). On a host with a GPU the checks that
 * need none still hold: new pinned memory there is a fresh allocation, never one of ours.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/cuda_util.h"

static int failed;

#define CHECK(cond, ...)                                                                                       \
	do {                                                                                                   \
		if (!(cond)) {                                                                                 \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                 \
			printf(__VA_ARGS__);                                                                   \
			printf("\n");                                                                          \
			failed = 1;                                                                            \
		}                                                                                              \
	} while (0)

/* A stand-in for a pinned buffer (the depot only keeps pointers; nothing here is given to CUDA). */
static struct sdc_cuda_pinned fake_pinned(size_t bytes)
{
	struct sdc_cuda_pinned h;
	h.p = (uint8_t *)malloc(bytes);
	h.bytes = bytes;
	return h;
}

static void hung_flags(void)
{
	char err[128] = "";
	CHECK(!sdc_cuda_is_hung(2) && !sdc_cuda_is_hung(3), "no GPU is hung at the start");
	sdc_cuda_mark_hung(3);
	CHECK(sdc_cuda_is_hung(3), "GPU 3 marked");
	CHECK(!sdc_cuda_is_hung(2), "GPU 2 untouched by GPU 3's mark");
	CHECK(sdc_cuda_is_hung(-1) && sdc_cuda_is_hung(SDC_CUDA_MAX_DEVICES), "a GPU it cannot name counts as hung");
	CHECK(sdc_cuda_refuse_hung(2, err, sizeof(err)) == 0, "GPU 2 may start work");
	CHECK(sdc_cuda_refuse_hung(3, err, sizeof(err)) == -1 && strstr(err, "GPU 3 hung"), "GPU 3 refused: '%s'", err);
	CHECK(sdc_cuda_refuse_hung(-1, err, sizeof(err)) == -1, "no GPU refused");
}

static void pinned_depot(void)
{
	struct sdc_cuda_pinned big = fake_pinned(1 << 20), small = fake_pinned(64 << 10), h;
	uint8_t *const big_p = big.p, *const small_p = small.p;
	sdc_cuda_pinned_put(2, &big, NULL);
	sdc_cuda_pinned_put(2, &small, NULL);
	CHECK(!big.p && !small.p && !big.bytes, "given back: the caller's handle emptied");
	/* best fit: the smallest that holds the request */
	CHECK(sdc_cuda_pinned_get(&h, 1000) == cudaSuccess && h.p == small_p && h.bytes == (64 << 10),
	      "1000 bytes from the 64 KiB spare (got %p, %zu bytes)", (void *)h.p, h.bytes);
	struct sdc_cuda_pinned h2;
	CHECK(sdc_cuda_pinned_get(&h2, 100 << 10) == cudaSuccess && h2.p == big_p, "100 KiB from the 1 MiB spare");
	/* both taken: a third request is a new allocation (none without a driver), never one of ours */
	struct sdc_cuda_pinned h3;
	const cudaError_t e = sdc_cuda_pinned_get(&h3, 1000);
	CHECK(e != cudaSuccess ? !h3.p : h3.p != small_p && h3.p != big_p, "nothing handed out twice");

	/* on a hung GPU what is given back is left where it is (a stuck copy may still write it) */
	sdc_cuda_pinned_put(3, &h, NULL);
	CHECK(!h.p, "the handle emptied all the same");
	struct sdc_cuda_pinned h4;
	const cudaError_t e4 = sdc_cuda_pinned_get(&h4, 1000);
	CHECK(e4 != cudaSuccess ? !h4.p : h4.p != small_p, "a hung GPU's staging never reused");
	sdc_cuda_pinned_put(2, &h2, NULL); /* (kept for the process: the depot owns it now) */
	free(small_p); /* (abandoned by the depot with its hung GPU; the stand-in is the test's to free) */
}

static void copy_bounds(void)
{
	struct sdc_cuda_pinned h = fake_pinned(64), none = { NULL, 0 };
	/* refused before any CUDA call: past the end, an overflowing offset, no staging */
	CHECK(sdc_cuda_from_device(&h, 60, (void *)16, 8, NULL) == cudaErrorInvalidValue, "64-byte staging, 8 at 60");
	CHECK(sdc_cuda_to_device((void *)16, &h, (size_t)-8, 16, NULL) == cudaErrorInvalidValue, "offset near SIZE_MAX");
	CHECK(sdc_cuda_from_device(&none, 0, (void *)16, 1, NULL) == cudaErrorInvalidValue, "no staging");
	CHECK(sdc_cuda_from_device_2d(&h, 0, 8, (void *)16, 64, 8, 9, NULL) == cudaErrorInvalidValue,
	      "9 rows 8 apart need 72 bytes");
	free(h.p);
}

static void spares(void)
{
	void *const a = (void *)0x1000, *const b = (void *)0x2000;
	sdc_cuda_spare_give(2, SDC_CUDA_SPARE_LT, a);
	CHECK(sdc_cuda_spare_take(2, SDC_CUDA_SPARE_BLAS) == NULL, "kinds kept apart");
	CHECK(sdc_cuda_spare_take(4, SDC_CUDA_SPARE_LT) == NULL, "GPUs kept apart");
	CHECK(sdc_cuda_spare_take(2, SDC_CUDA_SPARE_LT) == a, "the handle given back is taken again");
	CHECK(sdc_cuda_spare_take(2, SDC_CUDA_SPARE_LT) == NULL, "and only once");
	sdc_cuda_spare_give(3, SDC_CUDA_SPARE_LT, b);
	CHECK(sdc_cuda_spare_take(3, SDC_CUDA_SPARE_LT) == NULL, "a hung GPU's handle is not reused");
}

static void no_gpu(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0)
		return; /* (a host with a GPU: the workspace would be made) */
	struct sdc_cuda_work w;
	char err[128] = "";
	const size_t bytes[1] = { 16 };
	CHECK(sdc_cuda_work_init(&w, bytes, 1, 0, err, sizeof(err)) == -1 && strstr(err, "no usable GPU"),
	      "a workspace on a thread with no GPU: '%s'", err);
	CHECK(!w.s && !w.buf[0] && !w.host.p, "nothing made");
}

int main(void)
{
	hung_flags();
	pinned_depot();
	copy_bounds();
	spares();
	no_gpu();
	if (!failed)
		printf("PASS: hung flags, pinned staging kept and reused, copy bounds, handles kept\n");
	return failed;
}
