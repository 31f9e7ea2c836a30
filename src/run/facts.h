/*
 * Facts: what a probe, a benchmark or a campaign says about itself for the JSON it ends in (the
 * report's run.environment.<probe>, a benchmark's --json, a campaign's --json, a calibration
 * file). A probe states typed facts by name; the framework owns the format and writes it (the
 * serialisation: run/facts.c, the one place besides the framework's readers that knows the JSON).
 *
 * A struct sdc_facts is a group of named facts, in the order they were first stated:
 *   numbers   sdc_facts_int (an integer), sdc_facts_real (a real: 1.0 stays 1.0, never 1)
 *   strings   sdc_facts_str
 *   booleans  sdc_facts_bool; sdc_facts_null says "not known"
 *   groups    a name with dots is a path: sdc_facts_int(f, "rebuild.server", 3) makes the group
 *             "rebuild" if it is not there and sets "server" in it (run.environment.ecparity.
 *             rebuild.server once published as "ecparity"). A name stated again keeps its place
 *             and takes the new value. sdc_facts_key takes a name that is data (a GPU model,
 *             "cuBLASLt 13.1.0") as one name, dots and all.
 *   lists     sdc_facts_row appends a group (a row of a table) to the list of that name;
 *             sdc_facts_append_* append a number or a string.
 * A real that is not finite is not a JSON number: that fact is left out (and the rest kept).
 *
 * Threads: a struct sdc_facts belongs to the thread that builds it. What workers say about a run
 * goes in through sdc_run_facts, which takes the run's lock; a probe never holds it.
 *
 * Lifetimes: sdc_facts_new makes a group the caller frees with sdc_facts_free (or hands on: to
 * sdc_run_facts, sdc_facts_put, sdc_facts_merge, which take it). The groups that
 * sdc_facts_group, sdc_facts_key and sdc_facts_row return belong to their parent.
 */
#ifndef SDC_FACTS_H
#define SDC_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sdc_facts;
struct sdc_run;

struct sdc_facts *sdc_facts_new(void);
void sdc_facts_free(struct sdc_facts *f);

void sdc_facts_int(struct sdc_facts *f, const char *name, int64_t v);
void sdc_facts_real(struct sdc_facts *f, const char *name, double v);
/* v NULL: the fact is null */
void sdc_facts_str(struct sdc_facts *f, const char *name, const char *v);
void sdc_facts_bool(struct sdc_facts *f, const char *name, bool v);
void sdc_facts_null(struct sdc_facts *f, const char *name);

/* The group at name, made (empty) where there is none. */
struct sdc_facts *sdc_facts_group(struct sdc_facts *f, const char *name);
/* The group under one name that is data (no path: dots are part of it), made where there is none. */
struct sdc_facts *sdc_facts_key(struct sdc_facts *f, const char *key);
/* A new group appended to the list at name (the list made where there is none): a table's row. */
struct sdc_facts *sdc_facts_row(struct sdc_facts *f, const char *name);
/* The list at name, made empty where there is none (a list that may stay empty). */
void sdc_facts_list(struct sdc_facts *f, const char *name);
void sdc_facts_append_int(struct sdc_facts *f, const char *name, int64_t v);
void sdc_facts_append_real(struct sdc_facts *f, const char *name, double v);
void sdc_facts_append_str(struct sdc_facts *f, const char *name, const char *v);

/* g (taken) becomes the group at name, in place of what was there. */
void sdc_facts_put(struct sdc_facts *f, const char *name, struct sdc_facts *g);
/* g's facts (taken) into f, group into group: a fact of g replaces f's of the same name in its
 * place; new ones come after f's own. */
void sdc_facts_merge(struct sdc_facts *f, struct sdc_facts *g);
/* The same one level deep: each fact of g (taken), a group included, replaces f's whole. */
void sdc_facts_replace(struct sdc_facts *f, struct sdc_facts *g);
/* A copy of f (and all it holds), the caller's. */
struct sdc_facts *sdc_facts_copy(const struct sdc_facts *f);

/* ---- reading facts back (a file the framework loaded, or what a probe stated) ---- */
/* The group at name (a path), or NULL. f NULL: NULL. */
const struct sdc_facts *sdc_facts_find(const struct sdc_facts *f, const char *name);
/* The same under one name that is data. */
const struct sdc_facts *sdc_facts_find_key(const struct sdc_facts *f, const char *key);
/* Whether a fact of this name is there (of any type). */
bool sdc_facts_has(const struct sdc_facts *f, const char *name);
/* Each true only when the fact is there and of that type (an integer is not a real). */
bool sdc_facts_get_int(const struct sdc_facts *f, const char *name, int64_t *v);
bool sdc_facts_get_real(const struct sdc_facts *f, const char *name, double *v);
/* The string, or NULL. */
const char *sdc_facts_get_str(const struct sdc_facts *f, const char *name);
/* The name of f's i-th fact, in order (0 first), or NULL past the last: to go over groups whose
 * names are data (a calibration's GPU models). */
const char *sdc_facts_name_at(const struct sdc_facts *f, size_t i);
/* How many entries the list at name holds (0: none, or not a list), and its row i (NULL: not a group). */
size_t sdc_facts_rows(const struct sdc_facts *f, const char *name);
const struct sdc_facts *sdc_facts_row_at(const struct sdc_facts *f, const char *name, size_t i);

/* ---- files ---- */
/* A JSON file's object, read (at most max bytes, a regular file). NULL with err: "WHAT PATH: why". */
struct sdc_facts *sdc_facts_load(const char *path, size_t max, const char *what, char *err, size_t errlen);
/* SHA-256 (hex) over f without its "sha256" fact, keys sorted, compact, reals to 17 digits. 0, or -1. */
int sdc_facts_sha256(const struct sdc_facts *f, char hex[65]);
/* f written atomically to path, indented, reals to 17 digits, with a newline. 0, or -1 with err. */
int sdc_facts_write(const char *path, const struct sdc_facts *f, char *err, size_t errlen);

/* ---- a run's report ---- */
enum sdc_facts_how {
	SDC_FACTS_MERGE,   /* group into group, the new value of a fact replacing the old */
	SDC_FACTS_KEEP,    /* the same, where the facts already there win */
	SDC_FACTS_REPLACE, /* each fact of f replaces what is there whole, a group included */
};
/* f (taken) into the report's run.environment at name, as how says, under the run's lock; in a
 * burn's process, to the run's parent (run/record.h's sink). */
void sdc_run_facts_apply(struct sdc_run *run, const char *name, enum sdc_facts_how how, struct sdc_facts *f);
/* f (taken) merged into the report's run.environment at name ("ecparity": run.environment.
 * ecparity) under the run's lock: callable from any worker. */
void sdc_run_facts(struct sdc_run *run, const char *name, struct sdc_facts *f);
/* The same, where the facts already there win (the first worker's say). */
void sdc_run_facts_keep(struct sdc_run *run, const char *name, struct sdc_facts *f);
/* The same, where each fact of f replaces what is there whole, a group included (the last say). */
void sdc_run_facts_replace(struct sdc_run *run, const char *name, struct sdc_facts *f);

#endif
