/* Forced into StarPU's parallel_independent_heterogeneous_tasks_data.c (tests/simulation.cmake):
 * its tasks sleep SKEW_CUDA (on a CUDA worker) or SKEW_CPU (on a core) times what the program
 * asks, which is also what its own cost model says (1 where unset). So the model misjudges the
 * workers as on the GPU machine, where its GPU's tasks took 1.17x and its cores' 1.012x the
 * model (the costs our policies saved there at 390cf2d). */
#include <starpu.h>
#include <stdlib.h>

static inline void skewed_sleep(float seconds)
{
	const int cuda = starpu_worker_get_type(starpu_worker_get_id()) == STARPU_CUDA_WORKER;
	const char *factor = getenv(cuda ? "SKEW_CUDA" : "SKEW_CPU");
	starpu_sleep(seconds * (factor ? (float)atof(factor) : 1.0f));
}
#define starpu_sleep(seconds) skewed_sleep(seconds)
