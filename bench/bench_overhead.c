/* Per-task scheduling overhead, as StarPU's tests/microbenchs/tasks_overhead.c measures it:
 * N empty tasks (no data, or one small handle each), submitted then waited for; prints the
 * median over repetitions of microseconds per task. Links StarPU only, so any policy runs it
 * (ours through STARPU_SCHED_LIB).
 *   bench_overhead [ntasks] [reps] [buffers: 0|1] */
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>

static void empty(void *buffers[], void *arg) { (void)buffers; (void)arg; }
static struct starpu_codelet cl0 = {.cpu_funcs = {empty}, .cuda_funcs = {empty}, .nbuffers = 0, .name = "empty0"};
static struct starpu_codelet cl1 = {.cpu_funcs = {empty}, .cuda_funcs = {empty}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "empty1"};

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	const int ntasks = argc > 1 ? atoi(argv[1]) : 20000;
	const int reps = argc > 2 ? atoi(argv[2]) : 7;
	const int nbuf = argc > 3 ? atoi(argv[3]) : 0;
	if (ntasks <= 0 || reps <= 0 || (nbuf != 0 && nbuf != 1))
	{
		fprintf(stderr, "bench_overhead: usage: bench_overhead [ntasks>0] [reps>0] [buffers 0|1]\n");
		return 2;
	}
	int ret = starpu_init(NULL);
	if (ret == -ENODEV) return 77;
	STARPU_CHECK_RETURN_VALUE(ret, "starpu_init");
	starpu_data_handle_t *h = NULL;
	float *data = NULL;
	if (nbuf)
	{
		h = malloc(sizeof(*h) * ntasks);
		data = calloc(ntasks, sizeof(float));
		for (int i = 0; i < ntasks; i++)
			starpu_variable_data_register(&h[i], STARPU_MAIN_RAM, (uintptr_t)&data[i], sizeof(float));
	}
	double *per_task = malloc(sizeof(double) * reps), *submit = malloc(sizeof(double) * reps);
	for (int r = 0; r < reps + 1; r++)
	{
		double t0 = starpu_timing_now();
		for (int i = 0; i < ntasks; i++)
		{
			if (nbuf)
				ret = starpu_task_insert(&cl1, STARPU_RW, h[i], 0);
			else
				ret = starpu_task_insert(&cl0, 0);
			STARPU_CHECK_RETURN_VALUE(ret, "starpu_task_insert");
		}
		double t1 = starpu_timing_now();
		starpu_task_wait_for_all();
		double t2 = starpu_timing_now();
		if (r > 0) /* the first repetition warms up */
		{
			per_task[r - 1] = (t2 - t0) / ntasks;
			submit[r - 1] = (t1 - t0) / ntasks;
		}
	}
	qsort(per_task, reps, sizeof(double), cmp);
	qsort(submit, reps, sizeof(double), cmp);
	struct starpu_sched_policy *p = starpu_sched_get_sched_policy();
	printf("RESULT overhead policy=%s workers=%u buffers=%d ntasks=%d us_per_task=%.3f submit_us=%.3f min_us=%.3f max_us=%.3f\n",
	       p && p->policy_name ? p->policy_name : "?", starpu_worker_get_count(), nbuf, ntasks,
	       per_task[reps / 2], submit[reps / 2], per_task[0], per_task[reps - 1]);
	if (nbuf)
	{
		for (int i = 0; i < ntasks; i++)
			starpu_data_unregister(h[i]);
		free(h);
		free(data);
	}
	free(per_task);
	free(submit);
	starpu_shutdown();
	return 0;
}
