/*
 * tools/gen-machine-table: prints the machine and accelerator tables of
 * docs/format.md from the tables vx checks specs with, so the documentation
 * cannot drift from the code. `make docs` writes its output between the
 * markers in docs/format.md; `make lint-ci` fails when they differ
 * (tools/splice-doc.py).
 *
 * The tables are static in reconcile/load/machines.c, and that file stays the
 * only place they are written: this program includes it rather than have
 * machines.h grow an iteration API that only documentation needs. It is a
 * build tool, not part of vx, so it prints.
 */
#include "reconcile/load/machines.c"

#include <stdio.h>

/* The family of a machine type: all but its last dash-separated part
 * ("a3-highgpu" of "a3-highgpu-8g", "g2-standard" of "g2-standard-48"). */
static int family_len(const char *machine_type)
{
	const char *dash = strrchr(machine_type, '-');

	return dash ? (int)(dash - machine_type) : (int)strlen(machine_type);
}

static const char *yes_no(unsigned bit)
{
	return bit ? "yes" : "no";
}

static void print_fixed(void)
{
	const struct machines_gpu *gpu;
	size_t i;

	puts("| family | `machineType` | `acceleratorType` | `acceleratorCount` | FLEX_START |");
	puts("|---|---|---|--:|---|");
	for (i = 0; i < NELEM(fixed); i++) {
		gpu = machines_gpu_by_vertex(fixed[i].gpu);
		printf("| %.*s | `%s` | `%s` | %d | %s |\n", family_len(fixed[i].machine_type),
		       fixed[i].machine_type, fixed[i].machine_type, fixed[i].gpu, fixed[i].count,
		       yes_no(gpu ? gpu->flex_start : 0));
	}
}

/* "1, 2, 4" for a bit set of counts; "no" for none. */
static void print_counts(unsigned mask)
{
	unsigned c;
	int first = 1;

	if (!mask) {
		fputs(" no |", stdout);
		return;
	}
	for (c = 1; c <= 8; c <<= 1) {
		if (!(mask & c))
			continue;
		printf("%s%u", first ? " " : ", ", c);
		first = 0;
	}
	fputs(" |", stdout);
}

static void print_n1(void)
{
	size_t i, g;

	fputs("| `machineType` |", stdout);
	for (g = 0; g < NELEM(n1_gpus); g++)
		printf(" `%s` |", n1_gpus[g]);
	fputs("\n|---|", stdout);
	for (g = 0; g < NELEM(n1_gpus); g++)
		fputs("---|", stdout);
	putchar('\n');
	for (i = 0; i < NELEM(n1); i++) {
		printf("| `%s` |", n1[i].machine_type);
		for (g = 0; g < NELEM(n1_gpus); g++)
			print_counts(n1[i].counts[g]);
		putchar('\n');
	}
}

static void print_gpus(void)
{
	size_t i;

	puts("| `acceleratorType` | GPU | Compute Engine name (`Reservation` `accelerators`) | "
	     "FLEX_START | quota ID, STANDARD | quota ID, SPOT and FLEX_START |");
	puts("|---|---|---|---|---|---|");
	for (i = 0; i < NELEM(gpus); i++) {
		if (gpus[i].retired) {
			printf("| `%s` | %s | `%s` | retired: refused | | |\n", gpus[i].vertex,
			       gpus[i].display, gpus[i].compute);
			continue;
		}
		printf("| `%s` | %s | `%s` | %s | `%s` | `%s` |\n", gpus[i].vertex, gpus[i].display,
		       gpus[i].compute, yes_no(gpus[i].flex_start), gpus[i].quota_id,
		       gpus[i].quota_id_preemptible);
	}
}

int main(void)
{
	puts("Machine types that come with their GPUs: `acceleratorType` and `acceleratorCount` must be");
	puts("exactly these.");
	puts("");
	print_fixed();
	puts("");
	puts("N1 machine types take one of four GPUs, in the counts each size allows (\"no\": that GPU");
	puts("cannot be attached to it). An N1 machine type not listed takes no GPU; without an");
	puts("`acceleratorType` any N1 machine type runs CPU-only.");
	puts("");
	print_n1();
	puts("");
	puts("The accelerators, with the names a `Reservation` and a `QuotaPreference` use:");
	puts("");
	print_gpus();
	return ferror(stdout) || fflush(stdout) ? 1 : 0;
}
