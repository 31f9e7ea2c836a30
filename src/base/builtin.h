/* Text files compiled into the binary by tools/embed.py (profiles, goldens): sdcscan needs no data files. */
#ifndef SDC_BUILTIN_H
#define SDC_BUILTIN_H

struct sdc_builtin_file {
	const char *name;
	const char *text;
};

#endif
