/* The few macros every file takes: array size, min and max, a macro as a string, printf checks. */
#ifndef SDC_BASE_MACROS_H
#define SDC_BASE_MACROS_H


#define SDC_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define SDC_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SDC_MAX(a, b) ((a) > (b) ? (a) : (b))
/* A macro's value as a string literal: SDC_XSTR(SDC_EB_C_SIGMA) is "6.0". */
#define SDC_STR(x) #x
#define SDC_XSTR(x) SDC_STR(x)

#if defined(__GNUC__)
#define SDC_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SDC_PRINTF(f, a)
#endif

#endif
