/* StarPU client programs for a scheduling policy, one scenario per run:
 *   sched_clients SCENARIO
 * It links StarPU only, so that any policy (ours through STARPU_SCHED_LIB + STARPU_SCHED, or
 * a built-in) can be checked on what StarPU's API lets a program ask of every policy:
 * contexts, task->workerids and task->where, spreading tasks that write nothing, priorities,
 * reductions and data copies, and the trivial programs. Tasks sleep a fixed wall time, so that
 * a task lasts as long on a loaded 2-core machine as on an idle one and a worker that shares its
 * core (more workers than cores) is not starved by another's spinning.
 * Exits 0 when the scenario holds, 1 with one line on stderr saying what failed, 77 when the
 * machine lacks what the scenario needs (fewer than 3 CPU workers, say). */
#include <starpu.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXTASKS 512
#define TASK_US 1000.0
/* Below the runner's `timeout 60`, so that a hang names itself. */
#define WATCHDOG_S 45

struct record {
	unsigned runs;
	int worker;
	unsigned seq; /* order of the starts, across all workers */
};

static struct record records[MAXTASKS];
static unsigned next_seq;
static unsigned done_tasks;
static const char *scenario = "?";
static const char *policy = "?";
static int cpu_ids[STARPU_NMAXWORKERS];
static int ncpu;
static int failures;

/* One line for the first failure only; the others are counted. */
static void fail(const char *fmt, ...)
{
	if (failures++)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: %s: ", policy, scenario);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static int skip(const char *why)
{
	printf("%s: %s: skipped, %s\n", policy, scenario, why);
	return 77;
}

/* us of wall time, sleeping: with more workers than cores StarPU binds two workers to one
 * core, and a task that spun would slow the other, which then looks slow to any policy (eager
 * ran 41-44 of 60 tasks on one worker under load with spinning tasks). */
static void task_wait(double us)
{
	starpu_usleep((float)us);
}

static int task_index(void *arg)
{
	int i;
	starpu_codelet_unpack_args(arg, &i);
	STARPU_ASSERT(i >= 0 && i < MAXTASKS);
	return i;
}

static void note_start(int i)
{
	struct record *r = &records[i];
	r->worker = starpu_worker_get_id();
	r->seq = __atomic_fetch_add(&next_seq, 1, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&r->runs, 1, __ATOMIC_RELAXED);
}

static void nodata_func(void *buffers[], void *arg)
{
	(void)buffers;
	note_start(task_index(arg));
	task_wait(TASK_US);
	__atomic_fetch_add(&done_tasks, 1, __ATOMIC_RELAXED);
}

static void read_func(void *buffers[], void *arg)
{
	note_start(task_index(arg));
	const float *v = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
	const unsigned n = STARPU_VECTOR_GET_NX(buffers[0]);
	volatile float sum = 0;
	for (unsigned k = 0; k < n; k++)
		sum += v[k];
	task_wait(TASK_US);
	__atomic_fetch_add(&done_tasks, 1, __ATOMIC_RELAXED);
}

static void increment_func(void *buffers[], void *arg)
{
	note_start(task_index(arg));
	float *v = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
	const unsigned n = STARPU_VECTOR_GET_NX(buffers[0]);
	for (unsigned k = 0; k < n; k++)
		v[k] += 1.0f;
	task_wait(TASK_US);
	__atomic_fetch_add(&done_tasks, 1, __ATOMIC_RELAXED);
}

static struct starpu_codelet nodata_cl = {
	.cpu_funcs = {nodata_func},
	.nbuffers = 0,
	.name = "clients_nodata",
};
/* A CUDA worker runs the same host function: this program links no CUDA code. */
static struct starpu_codelet nodata_any_cl = {
	.cpu_funcs = {nodata_func},
	.cuda_funcs = {nodata_func},
	.nbuffers = 0,
	.name = "clients_nodata_any",
};
static struct starpu_codelet read_cl = {
	.cpu_funcs = {read_func},
	.nbuffers = 1,
	.modes = {STARPU_R},
	.name = "clients_read",
};
static struct starpu_codelet increment_cl = {
	.cpu_funcs = {increment_func},
	.nbuffers = 1,
	.modes = {STARPU_RW},
	.name = "clients_increment",
};

#define CHECK_SUBMIT(ret, what) do { \
	if ((ret) == -ENODEV) { fail("no worker can run %s", what); return 1; } \
	STARPU_CHECK_RETURN_VALUE(ret, "starpu_task_insert"); } while (0)

/* Each of tasks [0, n) ran exactly once. */
static void check_ran_once(int n)
{
	for (int i = 0; i < n; i++)
		if (records[i].runs != 1)
			fail("task %d ran %u times", i, records[i].runs);
}

static void count_per_worker(int from, int to, unsigned *per_worker)
{
	memset(per_worker, 0, STARPU_NMAXWORKERS * sizeof(*per_worker));
	for (int i = from; i < to; i++)
		if (records[i].runs == 1)
			per_worker[records[i].worker]++;
}

static void print_per_worker(const unsigned *per_worker)
{
	for (unsigned w = 0; w < starpu_worker_get_count(); w++)
		printf(" %u", per_worker[w]);
}

static void register_vectors(starpu_data_handle_t *h, float (*data)[64], int n)
{
	for (int u = 0; u < n; u++)
	{
		memset(data[u], 0, sizeof(data[u]));
		starpu_vector_data_register(&h[u], STARPU_MAIN_RAM, (uintptr_t)data[u], 64, sizeof(float));
	}
}

/* --- context: a scheduling context on part of the CPU workers, beside the global one --- */

#define CTX_TASKS 40
#define CTX_UNITS 8

static int run_context(void)
{
	if (ncpu < 3)
		return skip("needs 3 CPU workers");
	/* The last two CPU workers. StarPU leaves them in the global context too: they pop from
	 * both, and the global context's tasks may run anywhere. */
	int ctx_workers[2] = {cpu_ids[ncpu - 2], cpu_ids[ncpu - 1]};
	/* By name, as a user would write it: StarPU looks the name up in STARPU_SCHED_LIB first
	 * (sched_policy.c, find_sched_policy_from_name), so our policies are found too. */
	unsigned ctx = starpu_sched_ctx_create(ctx_workers, 2, "clients_ctx",
					       STARPU_SCHED_CTX_POLICY_NAME, policy, 0);
	if (ctx == STARPU_NMAX_SCHED_CTXS)
	{
		fail("starpu_sched_ctx_create failed");
		return 1;
	}
	struct starpu_sched_policy *ctx_policy = starpu_sched_ctx_get_sched_policy(ctx);
	if (!ctx_policy || !ctx_policy->policy_name || strcmp(ctx_policy->policy_name, policy) != 0)
		fail("the context runs policy %s, not %s",
		     ctx_policy && ctx_policy->policy_name ? ctx_policy->policy_name : "(none)", policy);

	static float data[CTX_UNITS][64];
	starpu_data_handle_t units[CTX_UNITS];
	register_vectors(units, data, CTX_UNITS);
	/* Interleaved: a context task (a chain per unit), then a global one without data. */
	for (int i = 0; i < CTX_TASKS; i++)
	{
		int c = i, g = CTX_TASKS + i;
		int ret = starpu_task_insert(&increment_cl, STARPU_RW, units[i % CTX_UNITS],
					     STARPU_SCHED_CTX, ctx, STARPU_VALUE, &c, sizeof(c), 0);
		CHECK_SUBMIT(ret, "a context task");
		ret = starpu_task_insert(&nodata_cl, STARPU_VALUE, &g, sizeof(g), 0);
		CHECK_SUBMIT(ret, "a global task");
	}
	starpu_task_wait_for_all_in_ctx(ctx);
	starpu_task_wait_for_all();
	for (int u = 0; u < CTX_UNITS; u++)
		starpu_data_unregister(units[u]);
	starpu_sched_ctx_delete(ctx);

	check_ran_once(2 * CTX_TASKS);
	for (int i = 0; i < CTX_TASKS; i++)
		if (records[i].runs == 1 && records[i].worker != ctx_workers[0] && records[i].worker != ctx_workers[1])
			fail("context task %d ran on worker %d, outside the context (workers %d and %d)",
			     i, records[i].worker, ctx_workers[0], ctx_workers[1]);
	for (int u = 0; u < CTX_UNITS; u++)
		for (int k = 0; k < 64; k++)
			if (data[u][k] != CTX_TASKS / CTX_UNITS)
			{
				fail("unit %d holds %g, not %d", u, data[u][k], CTX_TASKS / CTX_UNITS);
				break;
			}
	unsigned per_worker[STARPU_NMAXWORKERS];
	count_per_worker(0, CTX_TASKS, per_worker);
	printf("%s: context: context tasks per worker", policy);
	print_per_worker(per_worker);
	count_per_worker(CTX_TASKS, 2 * CTX_TASKS, per_worker);
	printf(", global tasks per worker");
	print_per_worker(per_worker);
	printf(" -> %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}

/* --- workerids and where: restrictions the policy must honour at push --- */

#define RESTRICTED_TASKS 40

static int run_workerids(void)
{
	if (ncpu < 3)
		return skip("needs 3 CPU workers");
	/* task->workerids, not STARPU_EXECUTE_ON_WORKER: the task still goes through the policy's
	 * push, which must choose among the allowed workers only. The bitmaps are the program's
	 * (StarPU does not free them), one uint32_t each since worker ids here are < 32. */
	const int one = cpu_ids[1], pair[2] = {cpu_ids[0], cpu_ids[2]};
	if (pair[1] >= 32)
		return skip("CPU worker ids past 31");
	static uint32_t mask_one, mask_pair;
	mask_one = 1u << one;
	mask_pair = (1u << pair[0]) | (1u << pair[1]);
	for (int i = 0; i < RESTRICTED_TASKS; i++)
	{
		int a = i, b = RESTRICTED_TASKS + i, c = 2 * RESTRICTED_TASKS + i;
		int ret = starpu_task_insert(&nodata_cl, STARPU_TASK_WORKERIDS, 1, &mask_one,
					     STARPU_VALUE, &a, sizeof(a), 0);
		CHECK_SUBMIT(ret, "a task restricted to one worker");
		ret = starpu_task_insert(&nodata_cl, STARPU_TASK_WORKERIDS, 1, &mask_pair,
					 STARPU_VALUE, &b, sizeof(b), 0);
		CHECK_SUBMIT(ret, "a task restricted to two workers");
		/* where = CPU on a codelet that also has a CUDA implementation. */
		ret = starpu_task_insert(&nodata_any_cl, STARPU_EXECUTE_WHERE, (unsigned long long)STARPU_CPU,
					 STARPU_VALUE, &c, sizeof(c), 0);
		CHECK_SUBMIT(ret, "a task with where = CPU");
	}
	starpu_task_wait_for_all();

	check_ran_once(3 * RESTRICTED_TASKS);
	for (int i = 0; i < RESTRICTED_TASKS; i++)
	{
		const struct record *a = &records[i], *b = &records[RESTRICTED_TASKS + i], *c = &records[2 * RESTRICTED_TASKS + i];
		if (a->runs == 1 && a->worker != one)
			fail("task %d, restricted to worker %d by workerids, ran on worker %d", i, one, a->worker);
		if (b->runs == 1 && b->worker != pair[0] && b->worker != pair[1])
			fail("task %d, restricted to workers %d and %d by workerids, ran on worker %d",
			     RESTRICTED_TASKS + i, pair[0], pair[1], b->worker);
		if (c->runs == 1 && starpu_worker_get_type(c->worker) != STARPU_CPU_WORKER)
			fail("task %d, with where = CPU, ran on worker %d, not a CPU worker", 2 * RESTRICTED_TASKS + i, c->worker);
	}
	unsigned per_worker[STARPU_NMAXWORKERS];
	printf("%s: workerids: on worker %d", policy, one);
	count_per_worker(0, RESTRICTED_TASKS, per_worker);
	print_per_worker(per_worker);
	printf(", on workers %d+%d", pair[0], pair[1]);
	count_per_worker(RESTRICTED_TASKS, 2 * RESTRICTED_TASKS, per_worker);
	print_per_worker(per_worker);
	printf(", where=CPU");
	count_per_worker(2 * RESTRICTED_TASKS, 3 * RESTRICTED_TASKS, per_worker);
	print_per_worker(per_worker);
	/* Without a CUDA worker, where = CPU excludes nobody: say so rather than claim a check. */
	printf("%s -> %s\n", starpu_cuda_worker_get_count() ? "" : " (no CUDA worker: where not exercised)",
	       failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}

/* --- shared_read and nodata: tasks that write nothing must still spread --- */

#define SPREAD_TASKS 60

static int run_spread(int with_data)
{
	if (ncpu < 3)
		return skip("needs 3 CPU workers");
	static float shared[4096];
	starpu_data_handle_t handle = NULL;
	if (with_data)
	{
		for (int k = 0; k < 4096; k++)
			shared[k] = (float)k;
		starpu_vector_data_register(&handle, STARPU_MAIN_RAM, (uintptr_t)shared, 4096, sizeof(float));
	}
	for (int i = 0; i < SPREAD_TASKS; i++)
	{
		int ret = with_data
			? starpu_task_insert(&read_cl, STARPU_R, handle, STARPU_VALUE, &i, sizeof(i), 0)
			: starpu_task_insert(&nodata_cl, STARPU_VALUE, &i, sizeof(i), 0);
		CHECK_SUBMIT(ret, "a task");
	}
	starpu_task_wait_for_all();
	if (with_data)
		starpu_data_unregister(handle);

	check_ran_once(SPREAD_TASKS);
	unsigned per_worker[STARPU_NMAXWORKERS];
	count_per_worker(0, SPREAD_TASKS, per_worker);
	/* 1 ms each on 3 or more workers: one worker doing more than 2/3 means the policy
	 * funnels them (e.g. treats a read-only handle as an owner). */
	for (unsigned w = 0; w < starpu_worker_get_count(); w++)
		if (per_worker[w] > 2 * SPREAD_TASKS / 3)
			fail("worker %u ran %u of the %d tasks (more than 2/3)", w, per_worker[w], SPREAD_TASKS);
	printf("%s: %s: %d tasks per worker", policy, scenario, SPREAD_TASKS);
	print_per_worker(per_worker);
	printf(" -> %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}

static int run_shared_read(void) { return run_spread(1); }
static int run_nodata(void) { return run_spread(0); }

/* --- priorities: on each worker, high before low --- */

#define PRIO_TASKS 24 /* of each priority */

static unsigned gates_started;
static int gates_open;

/* Holds a worker until the main thread has submitted everything. starpu_pause() would not
 * do: it does not wait for the workers, and a worker asleep in its pop wakes up at the first
 * push and runs that (low-priority) task while the others are still being submitted. */
static void gate_func(void *buffers[], void *arg)
{
	(void)buffers; (void)arg;
	__atomic_fetch_add(&gates_started, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&gates_open, __ATOMIC_ACQUIRE))
		usleep(100); /* more workers than cores: leave the submitter a core */
}

static struct starpu_codelet gate_cl = {
	.cpu_funcs = {gate_func},
	.nbuffers = 0,
	.name = "clients_gate",
};

static int run_priorities(void)
{
	if (ncpu < 2)
		return skip("needs 2 CPU workers");
	/* StarPU documents eager as one central FIFO (prio is eager with priorities): the
	 * property does not apply to it. */
	if (strcmp(policy, "eager") == 0)
		return skip("eager does not order by priority (StarPU's prio does)");
	/* StarPU caps every task's priority to the global context's range at submit, the range
	 * read once after the policy's init_sched (workers.c, perf knobs): a policy that sets no
	 * range (dmda and prio set [INT_MIN, INT_MAX]) makes every priority 0. */
	if (starpu_sched_get_max_priority() < 1)
	{
		fail("the policy's priority range is [%d, %d]: StarPU turns priority 1 into %d at submit "
		     "(init_sched should set the range, as dmda and prio do)",
		     starpu_sched_get_min_priority(), starpu_sched_get_max_priority(), starpu_sched_get_max_priority());
		return 1;
	}
	/* Each CPU worker is held by a gate (executed on it directly, not through the policy). */
	for (int k = 0; k < ncpu; k++)
	{
		int ret = starpu_task_insert(&gate_cl, STARPU_EXECUTE_ON_WORKER, cpu_ids[k], 0);
		CHECK_SUBMIT(ret, "a gate task");
	}
	const double deadline = starpu_timing_now() + 10e6;
	while (__atomic_load_n(&gates_started, __ATOMIC_ACQUIRE) < (unsigned)ncpu)
	{
		if (starpu_timing_now() > deadline)
		{
			fail("only %u of %d CPU workers started their gate task in 10 s", gates_started, ncpu);
			__atomic_store_n(&gates_open, 1, __ATOMIC_RELEASE);
			starpu_task_wait_for_all();
			return 1;
		}
		usleep(1000);
	}
	/* Low first, then high, interleaved: a FIFO would run them in the wrong order. Even
	 * indices are low (priority 0), odd ones high (priority 1, within every policy's range
	 * since those that order by priority set their maximum above 0). */
	for (int i = 0; i < 2 * PRIO_TASKS; i++)
	{
		int ret = starpu_task_insert(&nodata_cl, STARPU_PRIORITY, i % 2, STARPU_VALUE, &i, sizeof(i), 0);
		CHECK_SUBMIT(ret, "a task");
	}
	__atomic_store_n(&gates_open, 1, __ATOMIC_RELEASE);
	starpu_task_wait_for_all();

	check_ran_once(2 * PRIO_TASKS);
	int latest_high[STARPU_NMAXWORKERS], earliest_low[STARPU_NMAXWORKERS];
	for (int w = 0; w < STARPU_NMAXWORKERS; w++)
		latest_high[w] = earliest_low[w] = -1;
	for (int i = 0; i < 2 * PRIO_TASKS; i++)
	{
		const struct record *r = &records[i];
		if (r->runs != 1)
			continue;
		int *slot = i % 2 ? &latest_high[r->worker] : &earliest_low[r->worker];
		if (*slot < 0 || (i % 2 ? r->seq > records[*slot].seq : r->seq < records[*slot].seq))
			*slot = i;
	}
	unsigned nhigh[STARPU_NMAXWORKERS] = {0}, nlow[STARPU_NMAXWORKERS] = {0};
	for (int i = 0; i < 2 * PRIO_TASKS; i++)
		if (records[i].runs == 1)
			(i % 2 ? nhigh : nlow)[records[i].worker]++;
	for (unsigned w = 0; w < starpu_worker_get_count(); w++)
		if (latest_high[w] >= 0 && earliest_low[w] >= 0 && records[latest_high[w]].seq > records[earliest_low[w]].seq)
			fail("worker %u started low-priority task %d before high-priority task %d", w, earliest_low[w], latest_high[w]);
	printf("%s: priorities: high/low per worker", policy);
	for (unsigned w = 0; w < starpu_worker_get_count(); w++)
		printf(" %u/%u", nhigh[w], nlow[w]);
	printf(" -> %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}

/* --- redux_cpy: reductions and starpu_data_cpy, in phases separated by idle time --- */

#define PHASES 3
#define REDUX_TASKS 20 /* per phase */
#define PHASE_UNITS 4
#define PHASE_INCREMENTS 3 /* per unit and phase */

static void add_func(void *buffers[], void *arg)
{
	int i;
	long value;
	starpu_codelet_unpack_args(arg, &i, &value);
	note_start(i);
	*(long *)STARPU_VARIABLE_GET_PTR(buffers[0]) += value;
	task_wait(TASK_US);
	__atomic_fetch_add(&done_tasks, 1, __ATOMIC_RELAXED);
}

static void sum_init_func(void *buffers[], void *arg)
{
	(void)arg;
	*(long *)STARPU_VARIABLE_GET_PTR(buffers[0]) = 0;
}

static void sum_redux_func(void *buffers[], void *arg)
{
	(void)arg;
	*(long *)STARPU_VARIABLE_GET_PTR(buffers[0]) += *(long *)STARPU_VARIABLE_GET_PTR(buffers[1]);
}

static struct starpu_codelet add_cl = {
	.cpu_funcs = {add_func},
	.nbuffers = 1,
	.modes = {STARPU_REDUX},
	.name = "clients_add",
};
static struct starpu_codelet sum_init_cl = {
	.cpu_funcs = {sum_init_func},
	.nbuffers = 1,
	.modes = {STARPU_W},
	.name = "clients_sum_init",
};
static struct starpu_codelet sum_redux_cl = {
	.cpu_funcs = {sum_redux_func},
	.nbuffers = 2,
	.modes = {STARPU_RW | STARPU_COMMUTE, STARPU_R},
	.name = "clients_sum_redux",
};

static int run_redux_cpy(void)
{
	static long sum;
	static float data[PHASE_UNITS][64], snapshots[PHASES][64];
	starpu_data_handle_t sum_handle, units[PHASE_UNITS], snap[PHASES];
	sum = 0;
	starpu_variable_data_register(&sum_handle, STARPU_MAIN_RAM, (uintptr_t)&sum, sizeof(sum));
	starpu_data_set_reduction_methods(sum_handle, &sum_redux_cl, &sum_init_cl);
	register_vectors(units, data, PHASE_UNITS);
	register_vectors(snap, snapshots, PHASES);

	int next = 0;
	long expected = 0;
	for (int p = 0; p < PHASES; p++)
	{
		/* Adds p*R+1 .. (p+1)*R into one variable through per-worker replicates. */
		for (int k = 0; k < REDUX_TASKS; k++)
		{
			long value = p * REDUX_TASKS + k + 1;
			expected += value;
			int i = next++;
			int ret = starpu_task_insert(&add_cl, STARPU_REDUX, sum_handle,
						     STARPU_VALUE, &i, sizeof(i), STARPU_VALUE, &value, sizeof(value), 0);
			CHECK_SUBMIT(ret, "a reduction task");
		}
		/* Ordinary tasks: a chain of increments per unit. */
		for (int k = 0; k < PHASE_UNITS * PHASE_INCREMENTS; k++)
		{
			int i = next++;
			int ret = starpu_task_insert(&increment_cl, STARPU_RW, units[k % PHASE_UNITS],
						     STARPU_VALUE, &i, sizeof(i), 0);
			CHECK_SUBMIT(ret, "an increment task");
		}
		/* Then a copy of unit 0 as it is at the end of this phase (ordered after the
		 * increments by sequential consistency). */
		int ret = starpu_data_cpy(snap[p], units[0], 1, NULL, NULL);
		STARPU_CHECK_RETURN_VALUE(ret, "starpu_data_cpy");
		/* Reading the variable ends the reduction. */
		ret = starpu_data_acquire(sum_handle, STARPU_R);
		STARPU_CHECK_RETURN_VALUE(ret, "starpu_data_acquire");
		if (sum != expected)
			fail("phase %d: the reduction gives %ld, not %ld", p, sum, expected);
		starpu_data_release(sum_handle);
		starpu_task_wait_for_all();
		/* An idle moment between phases: a policy that cuts batches at idle moments
		 * sees one batch per phase. */
		usleep(100000);
	}
	starpu_data_unregister(sum_handle);
	for (int u = 0; u < PHASE_UNITS; u++)
		starpu_data_unregister(units[u]);
	for (int p = 0; p < PHASES; p++)
		starpu_data_unregister(snap[p]);

	check_ran_once(next);
	if (sum != expected)
		fail("the reduction gives %ld, not %ld", sum, expected);
	for (int u = 0; u < PHASE_UNITS; u++)
		if (data[u][0] != PHASES * PHASE_INCREMENTS || data[u][63] != PHASES * PHASE_INCREMENTS)
			fail("unit %d holds %g, not %d", u, data[u][0], PHASES * PHASE_INCREMENTS);
	for (int p = 0; p < PHASES; p++)
		if (snapshots[p][0] != (p + 1) * PHASE_INCREMENTS || snapshots[p][63] != (p + 1) * PHASE_INCREMENTS)
			fail("the copy after phase %d holds %g, not %d", p, snapshots[p][0], (p + 1) * PHASE_INCREMENTS);
	unsigned per_worker[STARPU_NMAXWORKERS];
	count_per_worker(0, next, per_worker);
	/* "N phases" is read by the runner (at least N batches for our policies). */
	printf("%s: redux_cpy: %d phases, sum %ld, tasks per worker", policy, PHASES, sum);
	print_per_worker(per_worker);
	printf(" -> %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}

/* --- empty and nodata_tiny: the trivial programs --- */

static int run_empty(void)
{
	printf("%s: empty: init and shutdown -> ok\n", policy);
	return 0;
}

static void nothing_func(void *buffers[], void *arg)
{
	(void)buffers; (void)arg;
	__atomic_fetch_add(&records[0].runs, 1, __ATOMIC_RELAXED);
}

static struct starpu_codelet nothing_cl = {
	.cpu_funcs = {nothing_func},
	.cuda_funcs = {nothing_func},
	.nbuffers = 0,
	.name = "clients_nothing",
};

static int run_nodata_tiny(void)
{
	/* One task that does nothing and has no data, then one without a codelet (StarPU
	 * completes that one itself, without the policy). */
	int ret = starpu_task_insert(&nothing_cl, 0);
	CHECK_SUBMIT(ret, "the task");
	struct starpu_task *control = starpu_task_create();
	control->cl = NULL;
	ret = starpu_task_submit(control);
	STARPU_CHECK_RETURN_VALUE(ret, "starpu_task_submit");
	starpu_task_wait_for_all();
	if (records[0].runs != 1)
		fail("the task ran %u times", records[0].runs);
	printf("%s: nodata_tiny: -> %s\n", policy, failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}

/* --- main --- */

static const struct {
	const char *name;
	int (*run)(void);
} scenarios[] = {
	{"context", run_context},
	{"workerids", run_workerids},
	{"shared_read", run_shared_read},
	{"nodata", run_nodata},
	{"priorities", run_priorities},
	{"redux_cpy", run_redux_cpy},
	{"empty", run_empty},
	{"nodata_tiny", run_nodata_tiny},
};
#define NSCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

static size_t put_number(char *at, unsigned n)
{
	char digits[16];
	size_t len = 0;
	do
		digits[len++] = '0' + n % 10;
	while ((n /= 10) && len < sizeof(digits));
	for (size_t k = 0; k < len; k++)
		at[k] = digits[len - 1 - k];
	return len;
}

/* A hang (a task never run, a context never drained) ends with one line, not the runner's
 * silent kill. Async-signal-safe: write(2) of a message built by hand. */
static void on_watchdog(int sig)
{
	(void)sig;
	char msg[256];
	size_t len = 0;
	const char *parts[] = {policy, ": ", scenario, ": hung: no end after "};
	for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++)
		for (const char *c = parts[k]; *c && len < 200; c++)
			msg[len++] = *c;
	len += put_number(msg + len, WATCHDOG_S);
	memcpy(msg + len, " s, ", 4);
	len += 4;
	len += put_number(msg + len, __atomic_load_n(&done_tasks, __ATOMIC_RELAXED));
	const char *tail = " tasks done\n";
	memcpy(msg + len, tail, strlen(tail));
	len += strlen(tail);
	ssize_t ignored = write(2, msg, len);
	(void)ignored;
	_exit(1);
}

int main(int argc, char **argv)
{
	int found = -1;
	for (size_t s = 0; argc == 2 && s < NSCENARIOS; s++)
		if (strcmp(argv[1], scenarios[s].name) == 0)
			found = (int)s;
	if (found < 0)
	{
		fprintf(stderr, "usage: %s SCENARIO, one of:", argv[0]);
		for (size_t s = 0; s < NSCENARIOS; s++)
			fprintf(stderr, " %s", scenarios[s].name);
		fputc('\n', stderr);
		return 1;
	}
	scenario = scenarios[found].name;
	signal(SIGALRM, on_watchdog);
	alarm(WATCHDOG_S);

	int ret = starpu_init(NULL);
	if (ret == -ENODEV)
		return skip("StarPU has no worker");
	STARPU_CHECK_RETURN_VALUE(ret, "starpu_init");
	struct starpu_sched_policy *p = starpu_sched_get_sched_policy();
	/* A copy: creating a context by name re-opens STARPU_SCHED_LIB (dlclose, then dlopen),
	 * which may unmap the library's own string. */
	static char name[64];
	if (p && p->policy_name)
	{
		snprintf(name, sizeof(name), "%s", p->policy_name);
		policy = name;
	}
	ncpu = starpu_worker_get_ids_by_type(STARPU_CPU_WORKER, cpu_ids, STARPU_NMAXWORKERS);

	int rc = scenarios[found].run();
	starpu_shutdown();
	return rc;
}
