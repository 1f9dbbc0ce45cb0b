/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * report.c - output: OSU-style tables (size first, figure second, so OSU
 * plotting scripts read them; reference columns to the right) or CSV.
 * Only rank 0 prints.
 */
#include "config.h"

#include "ptlbench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void header_lines(struct pb_ctx *c, const struct pb_table *t, const char *const *extra)
{
	printf("# p3stack ptlbench: %s\n", t->title);
	printf("# nal: %s  progress: %s  transfer: %s  host: %s  commit: %s  date: %s\n", c->nal,
	       c->progress, c->transfer, c->host, c->commit, c->date);
	if (c->cpus[0])
		printf("# cpus: %s  load: %.2f (1-min average at start; > 0.5 means other busy processes)\n",
		       c->cpus, c->load[0]);
	if (c->oversub[0])
		printf("# oversubscription: %s\n", c->oversub);
	/* the placement of the job's emulated NICs (ptlrun --nic-cpus) */
	const char *nic_cpus = getenv("P3_PTLRUN_NIC_CPUS");
	if (nic_cpus && *nic_cpus)
		printf("# NICs (mcpd) on CPUs: %s  (NIC i on the i-th)\n", nic_cpus);
	if (c->npairs > 1)
		printf("# ranks: %d, %d pairs measured at once (rank r with rank r+%d); figures of ranks 0 "
		       "and %d\n",
		       c->nranks, c->npairs, c->npairs, c->npairs);
	for (; extra && *extra; extra++)
		printf("# %s\n", *extra);
	if (t->ref)
		printf("# reference: %s; ratio = value / reference\n", t->ref->note);
	if (t->ref && t->ref2)
		printf("# second reference: %s; ratio/floor = value / floor (in CSV: a line '# floor,TEST,SIZE,FLOOR,RATIO' "
		       "before each row); the first ratio is the one goals quote\n",
		       t->ref2->note);
}

void pb_table_begin(struct pb_ctx *c, const struct pb_table *t, const char *const *extra_hdr)
{
	if (c->rank != 0)
		return;
	header_lines(c, t, extra_hdr);
	if (c->o.csv) {
		if (!c->csv_header_done)
			printf("test,nal,progress,size,value,unit,reference,ratio,host,commit\n");
		c->csv_header_done = 1;
		return;
	}
	printf("%-*s%*s", 10, "# Size", 18, t->label);
	if (t->ref)
		printf("%*s%*s", 16, t->ref->col, 10, "Ratio");
	if (t->ref && t->ref2)
		printf("%*s%*s", 16, t->ref2->col, 14, "Ratio/floor");
	printf("\n");
}

/* CSV fields here never hold commas or quotes, except possibly the host. */
static void csv_field(const char *s)
{
	if (strpbrk(s, ",\"\n")) {
		putchar('"');
		for (; *s; s++) {
			if (*s == '"')
				putchar('"');
			putchar(*s);
		}
		putchar('"');
	} else {
		fputs(s, stdout);
	}
}

void pb_table_row(struct pb_ctx *c, const struct pb_table *t, size_t size, double value)
{
	double ref = t->ref ? t->ref->value(c, t->kind, size) : NAN;
	double ratio = (isfinite(ref) && ref > 0) ? value / ref : NAN;
	double ref2 = t->ref2 ? t->ref2->value(c, t->kind, size) : NAN;

	if (c->rank != 0)
		return;
	if (c->o.csv) {
		if (t->ref && t->ref2 && isfinite(ref2)) /* before the row: the row stays last */
			printf("# floor,%s,%zu,%.4f,%.4f\n", t->test, size, ref2, value / ref2);
		printf("%s,%s,%s,%zu,%.4f,%s,", t->test, c->nal, c->progress, size, value, t->unit);
		if (isfinite(ref))
			printf("%.4f", ref);
		putchar(',');
		if (isfinite(ratio))
			printf("%.4f", ratio);
		putchar(',');
		csv_field(c->host);
		putchar(',');
		csv_field(c->commit);
		putchar('\n');
		return;
	}
	printf("%-*d%*.*f", 10, (int)size, 18, 2, value);
	if (t->ref) {
		if (isfinite(ref))
			printf("%*.*f%*.*f", 16, t->kind == PB_KIND_BW ? 2 : 3, ref, 10, 2, ratio);
		else
			printf("%*s%*s", 16, "-", 10, "-");
	}
	if (t->ref && t->ref2) {
		if (isfinite(ref2) && ref2 > 0)
			printf("%*.*f%*.*f", 16, 3, ref2, 14, 2, value / ref2);
		else
			printf("%*s%*s", 16, "-", 14, "-");
	}
	printf("\n");
}

void pb_table_note(struct pb_ctx *c, const char *line)
{
	if (c->rank == 0)
		printf("# %s\n", line);
}

void pb_table_end(struct pb_ctx *c, const struct pb_table *t, const char *trailer)
{
	(void)t;
	if (c->rank != 0)
		return;
	if (trailer)
		printf("# %s\n", trailer);
	if (!c->o.csv)
		printf("\n");
	fflush(stdout);
}
