/* A plain StarPU program that knows nothing of our code: it links StarPU only, so that any
 * policy (ours through STARPU_SCHED_LIB, or a built-in) can be checked on it, as StarPU's
 * tests/sched_policies/execute_all_tasks.c does. It checks, for a task set with independent
 * tasks, chains through shared data, explicit dependencies (a DAG) and CPU-only codelets:
 * every task runs exactly once, on a worker that can run it, after its dependencies.
 * Exits 0 when all hold, 1 otherwise, 77 when StarPU has no worker. */
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>

#define NTASKS 600
#define NDATA 24

struct record {
	int runs;
	int worker;
	double start, end;
	int cpu_only;
};

static struct record records[NTASKS];
static starpu_pthread_mutex_t mutex = STARPU_PTHREAD_MUTEX_INITIALIZER;

static void work(void *buffers[], void *arg, int on_cuda)
{
	(void)buffers;
	struct record *r = &records[(intptr_t)arg];
	double start = starpu_timing_now();
	/* A little real work, so that tasks overlap. */
	volatile double x = 0;
	for (int i = 0; i < 2000; i++)
		x += i * 0.5;
	STARPU_PTHREAD_MUTEX_LOCK(&mutex);
	r->runs++;
	r->worker = starpu_worker_get_id();
	r->start = start;
	r->end = starpu_timing_now();
	STARPU_PTHREAD_MUTEX_UNLOCK(&mutex);
	(void)on_cuda;
}
static void cpu_work(void *buffers[], void *arg) { work(buffers, arg, 0); }
static void cuda_work(void *buffers[], void *arg) { work(buffers, arg, 1); }

static struct starpu_codelet any_cl = {
	.cpu_funcs = {cpu_work},
	.cuda_funcs = {cuda_work},
	.nbuffers = 1,
	.modes = {STARPU_RW},
	.name = "invariants_any",
};
static struct starpu_codelet cpu_cl = {
	.cpu_funcs = {cpu_work},
	.nbuffers = 1,
	.modes = {STARPU_RW},
	.name = "invariants_cpu_only",
};
static struct starpu_codelet reader_cl = {
	.cpu_funcs = {cpu_work},
	.cuda_funcs = {cuda_work},
	.nbuffers = 2,
	.modes = {STARPU_R, STARPU_RW},
	.name = "invariants_reader",
};

int main(void)
{
	int ret = starpu_init(NULL);
	if (ret == -ENODEV)
		return 77;
	STARPU_CHECK_RETURN_VALUE(ret, "starpu_init");

	static float data[NDATA][256];
	starpu_data_handle_t handles[NDATA];
	for (int i = 0; i < NDATA; i++)
		starpu_vector_data_register(&handles[i], STARPU_MAIN_RAM, (uintptr_t)data[i], 256, sizeof(float));

	struct starpu_task *tasks[NTASKS];
	/* Each task i writes handle i % NDATA (a chain per handle, in submission order); every
	 * fifth also reads the previous handle; every seventh depends explicitly on task i - 3;
	 * every third is CPU-only. */
	for (int i = 0; i < NTASKS; i++)
	{
		struct starpu_task *t = starpu_task_create();
		records[i].cpu_only = i % 3 == 0 && !(i % 5 == 0 && i > 0);
		if (i % 5 == 0 && i > 0)
		{
			t->cl = &reader_cl;
			t->handles[0] = handles[(i + NDATA - 1) % NDATA];
			t->handles[1] = handles[i % NDATA];
		}
		else
		{
			t->cl = records[i].cpu_only ? &cpu_cl : &any_cl;
			t->handles[0] = handles[i % NDATA];
		}
		t->cl_arg = (void *)(intptr_t)i;
		t->detach = 0;
		tasks[i] = t;
	}
	/* Explicit dependencies are declared before anything runs: declaring one on a task
	 * that is completing races inside StarPU 1.4.10 (cg.c asserts, under built-in
	 * policies too). */
	for (int i = 0; i < NTASKS; i++)
		if (i % 7 == 0 && i >= 3)
			starpu_task_declare_deps_array(tasks[i], 1, &tasks[i - 3]);
	for (int i = 0; i < NTASKS; i++)
	{
		ret = starpu_task_submit(tasks[i]);
		if (ret == -ENODEV)
		{
			fprintf(stderr, "no worker can run task %d\n", i);
			return 1;
		}
		STARPU_CHECK_RETURN_VALUE(ret, "starpu_task_submit");
	}
	for (int i = 0; i < NTASKS; i++)
	{
		ret = starpu_task_wait(tasks[i]);
		STARPU_CHECK_RETURN_VALUE(ret, "starpu_task_wait");
	}

	int failures = 0;
	int last_writer[NDATA];
	for (int d = 0; d < NDATA; d++)
		last_writer[d] = -1;
	for (int i = 0; i < NTASKS; i++)
	{
		struct record *r = &records[i];
		if (r->runs != 1)
		{
			fprintf(stderr, "task %d ran %d times\n", i, r->runs);
			failures++;
			continue;
		}
		const int is_cuda = starpu_worker_get_type(r->worker) == STARPU_CUDA_WORKER;
		if (r->cpu_only && is_cuda)
		{
			fprintf(stderr, "CPU-only task %d ran on a CUDA worker\n", i);
			failures++;
		}
		/* Data order: the previous writer of the same handle finished first. */
		const int d = i % NDATA;
		if (last_writer[d] >= 0 && records[last_writer[d]].end > r->start)
		{
			fprintf(stderr, "task %d started before task %d, which writes the same data, ended\n", i, last_writer[d]);
			failures++;
		}
		last_writer[d] = i;
		if (i % 7 == 0 && i >= 3 && records[i - 3].end > r->start)
		{
			fprintf(stderr, "task %d started before its dependency %d ended\n", i, i - 3);
			failures++;
		}
	}
	unsigned per_worker[STARPU_NMAXWORKERS] = {0};
	for (int i = 0; i < NTASKS; i++)
		if (records[i].runs == 1)
			per_worker[records[i].worker]++;

	/* The tasks were freed by starpu_task_wait (their destroy flag is set). */
	for (int i = 0; i < NDATA; i++)
		starpu_data_unregister(handles[i]);
	struct starpu_sched_policy *policy = starpu_sched_get_sched_policy();
	const char *name = policy && policy->policy_name ? policy->policy_name : "?";
	printf("%s: %d tasks on %u workers:", name, NTASKS, starpu_worker_get_count());
	for (unsigned w = 0; w < starpu_worker_get_count(); w++)
		printf(" %u", per_worker[w]);
	printf(" -> %s\n", failures ? "FAILED" : "ok");
	starpu_shutdown();
	return failures ? 1 : 0;
}
