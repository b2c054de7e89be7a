/* A block that the GPU updates and whose face a short task then reads, as StarPU's stencil
 * saves a block's layer for its neighbour: by their times alone (2 us on a core, 30 us on the
 * GPU) the short tasks would run on the CPU class, but a core would first copy the block (4 MiB)
 * from the GPU, the only place it is valid. Every buffer lives in main memory (registered
 * there, as the stencil's), so that only validity differs. Run in simulation
 * (tests/sim_held.sh): prints how many of the face tasks ran on the GPU, among those whose
 * block the GPU updated (valid there only) and among those whose block was never updated.
 *   HELD gpu=G of=N    RAM gpu=G of=N */
#include <starpu.h>
#include <stdio.h>

#define NBLOCKS 32
#define BLOCK_FLOATS (1u << 20)
#define FACE_FLOATS 1024u

static void nothing(void *buffers[], void *arg) {
  (void)buffers;
  (void)arg;
}

/* us on one core and on the GPU */
static double update_cost(struct starpu_task *t, struct starpu_perfmodel_arch *a, unsigned i) {
  (void)t;
  (void)i;
  return a->devices[0].type == STARPU_CUDA_WORKER ? 500.0 : 50000.0;
}
static double face_cost(struct starpu_task *t, struct starpu_perfmodel_arch *a, unsigned i) {
  (void)t;
  (void)i;
  return a->devices[0].type == STARPU_CUDA_WORKER ? 30.0 : 2.0;
}

static struct starpu_perfmodel update_model = {.type = STARPU_PER_ARCH, .arch_cost_function = update_cost};
static struct starpu_perfmodel face_model = {.type = STARPU_PER_ARCH, .arch_cost_function = face_cost};
static struct starpu_codelet update_cl = {.cpu_funcs = {nothing}, .cuda_funcs = {nothing}, .nbuffers = 1,
                                          .modes = {STARPU_RW}, .model = &update_model, .name = "update"};
static struct starpu_codelet face_cl = {.cpu_funcs = {nothing}, .cuda_funcs = {nothing}, .nbuffers = 2,
                                        .modes = {STARPU_R, STARPU_W}, .model = &face_model, .name = "face"};

/* 1 where the task ran on a CUDA worker: [held][block] for the face tasks, [block] for the updates */
static int on_gpu[2][NBLOCKS], updated_on_gpu[NBLOCKS];

static void where_it_ran(void *arg) {
  int *slot = arg;
  *slot = starpu_worker_get_type(starpu_worker_get_id()) == STARPU_CUDA_WORKER;
}

static int submit(struct starpu_codelet *cl, starpu_data_handle_t a, starpu_data_handle_t b, int *slot) {
  struct starpu_task *t = starpu_task_create();
  t->cl = cl;
  t->handles[0] = a;
  if (b) t->handles[1] = b;
  if (slot) {
    t->callback_func = where_it_ran;
    t->callback_arg = slot;
  }
  return starpu_task_submit(t);
}

int main(void) {
  if (starpu_init(NULL) != 0) return 77;
  if (starpu_worker_get_count_by_type(STARPU_CUDA_WORKER) < 1 || starpu_worker_get_count_by_type(STARPU_CPU_WORKER) < 1) {
    fprintf(stderr, "sim_held: needs CPU and CUDA workers\n");
    starpu_shutdown();
    return 77;
  }
  starpu_data_handle_t block[2][NBLOCKS], face[2][NBLOCKS];
  float *memory[2][NBLOCKS][2];
  for (int h = 0; h < 2; ++h)
    for (int b = 0; b < NBLOCKS; ++b) {
      /* folded: simulation gives every block the same pages */
      if (starpu_malloc_flags((void **)&memory[h][b][0], BLOCK_FLOATS * sizeof(float), STARPU_MALLOC_SIMULATION_FOLDED) != 0 ||
          starpu_malloc_flags((void **)&memory[h][b][1], FACE_FLOATS * sizeof(float), STARPU_MALLOC_SIMULATION_FOLDED) != 0)
        return 1;
      starpu_vector_data_register(&block[h][b], STARPU_MAIN_RAM, (uintptr_t)memory[h][b][0], BLOCK_FLOATS, sizeof(float));
      starpu_vector_data_register(&face[h][b], STARPU_MAIN_RAM, (uintptr_t)memory[h][b][1], FACE_FLOATS, sizeof(float));
    }
  /* held: the GPU updates the block (a core would take 100 times longer), then its face is read;
   * RAM: the block's face is read with the block as registered. */
  for (int b = 0; b < NBLOCKS; ++b)
    if (submit(&update_cl, block[1][b], NULL, &updated_on_gpu[b]) != 0) return 1;
  for (int h = 0; h < 2; ++h)
    for (int b = 0; b < NBLOCKS; ++b)
      if (submit(&face_cl, block[h][b], face[h][b], &on_gpu[h][b]) != 0) return 1;
  starpu_task_wait_for_all();
  int gpu[2] = {0, 0}, held = 0;
  for (int b = 0; b < NBLOCKS; ++b) {
    gpu[0] += on_gpu[0][b];
    if (updated_on_gpu[b]) held++, gpu[1] += on_gpu[1][b];
  }
  printf("HELD gpu=%d of=%d    RAM gpu=%d of=%d\n", gpu[1], held, gpu[0], NBLOCKS);
  for (int h = 0; h < 2; ++h)
    for (int b = 0; b < NBLOCKS; ++b) {
      starpu_data_unregister_no_coherency(block[h][b]);
      starpu_data_unregister_no_coherency(face[h][b]);
      starpu_free_flags(memory[h][b][0], BLOCK_FLOATS * sizeof(float), STARPU_MALLOC_SIMULATION_FOLDED);
      starpu_free_flags(memory[h][b][1], FACE_FLOATS * sizeof(float), STARPU_MALLOC_SIMULATION_FOLDED);
    }
  starpu_shutdown();
  return 0;
}
