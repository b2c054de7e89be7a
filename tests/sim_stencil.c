/* The task graph of StarPU's examples/stencil (stencil-tasks.c), in simulation: NBZ z-blocks on
 * a ring, each of two layers (RW by its update) and two halo copies per side; per iteration an
 * update of every block, then two saves per block, each writing a neighbour's halo copies from
 * the block's layers. Times per task are those the GPU machine's traces gave the real program
 * (64 blocks of 128^3): an update 1400 us on a core, 185 us on the GPU; a save 4 us on a core,
 * 15 us on the GPU. The GPU is 7.6 times a core, and the 15 cores together twice the GPU: the
 * best makespan keeps about a third of the blocks on the GPU (tests/sim_stencil.sh). Prints
 *   STENCIL ms=T gpu_updates=G of=N */
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>

#define NBZ 64
#define NITER 32
#define EDGE 130 /* 128 + 2 halo planes */
#define LAYER_FLOATS (EDGE * EDGE * EDGE)
#define HALO_FLOATS (EDGE * EDGE)

static void nothing(void *buffers[], void *arg) {
  (void)buffers;
  (void)arg;
}

static double update_cost(struct starpu_task *t, struct starpu_perfmodel_arch *a, unsigned i) {
  (void)t;
  (void)i;
  return a->devices[0].type == STARPU_CUDA_WORKER ? 185.0 : 1400.0;
}
static double save_cost(struct starpu_task *t, struct starpu_perfmodel_arch *a, unsigned i) {
  (void)t;
  (void)i;
  return a->devices[0].type == STARPU_CUDA_WORKER ? 15.0 : 4.0;
}

static struct starpu_perfmodel update_model = {.type = STARPU_PER_ARCH, .arch_cost_function = update_cost};
static struct starpu_perfmodel save_model = {.type = STARPU_PER_ARCH, .arch_cost_function = save_cost};
static struct starpu_codelet update_cl = {
    .cpu_funcs = {nothing}, .cuda_funcs = {nothing}, .nbuffers = 6,
    .modes = {STARPU_RW, STARPU_RW, STARPU_R, STARPU_R, STARPU_R, STARPU_R},
    .model = &update_model, .name = "update"};
static struct starpu_codelet save_cl = {.cpu_funcs = {nothing}, .cuda_funcs = {nothing}, .nbuffers = 4,
                                        .modes = {STARPU_R, STARPU_R, STARPU_W, STARPU_W},
                                        .model = &save_model, .name = "save"};

enum { T = 0, B = 1 };
static starpu_data_handle_t layer[NBZ][2], halo[NBZ][2][2]; /* halo[z][side][copy] */
static int updated_on_gpu[NITER + 1][NBZ];

static void where_it_ran(void *arg) {
  int *slot = arg;
  *slot = starpu_worker_get_type(starpu_worker_get_id()) == STARPU_CUDA_WORKER;
}

static int submit_update(unsigned iter, unsigned z) {
  const unsigned old_layer = (iter - 1) % 2, new_layer = iter % 2;
  struct starpu_task *t = starpu_task_create();
  t->cl = &update_cl;
  t->handles[0] = layer[z][new_layer];
  t->handles[1] = layer[z][old_layer];
  t->handles[2] = halo[z][T][new_layer];
  t->handles[3] = halo[z][T][old_layer];
  t->handles[4] = halo[z][B][new_layer];
  t->handles[5] = halo[z][B][old_layer];
  t->callback_func = where_it_ran;
  t->callback_arg = &updated_on_gpu[iter][z];
  return starpu_task_submit(t);
}

/* The block's layers into the halo copies its neighbour in `dir` reads (stencil-tasks.c). */
static int submit_save(unsigned z, int dir) {
  const unsigned n = (z + NBZ + (unsigned)dir) % NBZ;
  const int side = dir > 0 ? B : T; /* the neighbour above reads its bottom halo */
  struct starpu_task *t = starpu_task_create();
  t->cl = &save_cl;
  t->handles[0] = layer[z][0];
  t->handles[1] = layer[z][1];
  t->handles[2] = halo[n][side][0];
  t->handles[3] = halo[n][side][1];
  return starpu_task_submit(t);
}

int main(void) {
  if (starpu_init(NULL) != 0) return 77;
  if (starpu_worker_get_count_by_type(STARPU_CUDA_WORKER) < 1 || starpu_worker_get_count_by_type(STARPU_CPU_WORKER) < 1) {
    fprintf(stderr, "sim_stencil: needs CPU and CUDA workers\n");
    starpu_shutdown();
    return 77;
  }
  float *memory[NBZ][6];
  for (unsigned z = 0; z < NBZ; ++z) {
    for (int k = 0; k < 6; ++k) {
      const size_t floats = k < 2 ? LAYER_FLOATS : HALO_FLOATS;
      /* folded: simulation gives every block the same pages */
      if (starpu_malloc_flags((void **)&memory[z][k], floats * sizeof(float), STARPU_MALLOC_SIMULATION_FOLDED) != 0)
        return 1;
    }
    for (int l = 0; l < 2; ++l)
      starpu_vector_data_register(&layer[z][l], STARPU_MAIN_RAM, (uintptr_t)memory[z][l], LAYER_FLOATS, sizeof(float));
    for (int s = 0; s < 2; ++s)
      for (int c = 0; c < 2; ++c)
        starpu_vector_data_register(&halo[z][s][c], STARPU_MAIN_RAM, (uintptr_t)memory[z][2 + 2 * s + c], HALO_FLOATS,
                                    sizeof(float));
  }
  const double start = starpu_timing_now();
  for (unsigned iter = 0; iter <= NITER; ++iter) {
    for (unsigned z = 0; z < NBZ && iter > 0; ++z)
      if (submit_update(iter, z) != 0) return 1;
    for (unsigned z = 0; z < NBZ && iter < NITER; ++z)
      if (submit_save(z, +1) != 0 || submit_save(z, -1) != 0) return 1;
  }
  starpu_task_wait_for_all();
  const double ms = (starpu_timing_now() - start) / 1e3;
  int gpu = 0;
  for (unsigned iter = 1; iter <= NITER; ++iter)
    for (unsigned z = 0; z < NBZ; ++z) gpu += updated_on_gpu[iter][z];
  printf("STENCIL ms=%.3f gpu_updates=%d of=%d\n", ms, gpu, NITER * NBZ);
  for (unsigned z = 0; z < NBZ; ++z) {
    for (int l = 0; l < 2; ++l) starpu_data_unregister_no_coherency(layer[z][l]);
    for (int s = 0; s < 2; ++s)
      for (int c = 0; c < 2; ++c) starpu_data_unregister_no_coherency(halo[z][s][c]);
    for (int k = 0; k < 6; ++k)
      starpu_free_flags(memory[z][k], (k < 2 ? LAYER_FLOATS : HALO_FLOATS) * sizeof(float),
                        STARPU_MALLOC_SIMULATION_FOLDED);
  }
  starpu_shutdown();
  return 0;
}
