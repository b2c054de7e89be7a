#include "codelets/height_tasks.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "codelets/simulated.hpp"
#ifdef FNNDTPS_HAVE_CUDA
#include "codelets/cuda/heights_cuda.hpp"
#endif

namespace heights {

namespace {

struct Args {
  int first, mark, has_residual, has_mask;
  double mean;
};

// Buffers, in order: z, [residual], [mask], the strip's kParts partials (a vector).
Strip strip(void* buffers[], const Args& a, Partial** parts) {
  Strip s;
  int i = 0;
  s.z = reinterpret_cast<float*>(STARPU_MATRIX_GET_PTR(buffers[i]));
  s.ld = int(STARPU_MATRIX_GET_LD(buffers[i]));
  s.cols = int(STARPU_MATRIX_GET_NX(buffers[i]));
  s.rows = int(STARPU_MATRIX_GET_NY(buffers[i]));
  ++i;
  if (a.has_residual) {
    s.residual = reinterpret_cast<float*>(STARPU_MATRIX_GET_PTR(buffers[i]));
    s.ld_residual = int(STARPU_MATRIX_GET_LD(buffers[i]));
    ++i;
  }
  if (a.has_mask) {
    s.mask = reinterpret_cast<const unsigned char*>(STARPU_MATRIX_GET_PTR(buffers[i]));
    s.ld_mask = int(STARPU_MATRIX_GET_LD(buffers[i]));
    ++i;
  }
  *parts = reinterpret_cast<Partial*>(STARPU_VECTOR_GET_PTR(buffers[i]));
  return s;
}

void cpu_func(void* buffers[], void* cl_arg) {
  const Args& a = *static_cast<const Args*>(cl_arg);
  Partial* parts;
  const Strip s = strip(buffers, a, &parts);
  if (a.first) cpu::first_pass(s, a.mark, parts);
  else cpu::moments(s, a.mean, parts);
}

#ifdef FNNDTPS_HAVE_CUDA
void cuda_func(void* buffers[], void* cl_arg) {
  const Args& a = *static_cast<const Args*>(cl_arg);
  Partial* parts;
  const Strip s = strip(buffers, a, &parts);
  if (a.first) cuda::first_pass(s, a.mark, parts, starpu_cuda_get_local_stream());
  else cuda::moments(s, a.mean, parts, starpu_cuda_get_local_stream());
}
#endif

// History models per pass and strip shape.
uint32_t footprint(struct starpu_task* task) {
  const Args& a = *static_cast<const Args*>(task->cl_arg);
  const starpu_data_handle_t z = STARPU_TASK_GET_HANDLE(task, 0);
  const uint32_t key[5] = {uint32_t(a.first * 4 + a.has_residual * 2 + a.has_mask), uint32_t(a.mark),
                           starpu_matrix_get_nx(z), starpu_matrix_get_ny(z), 0};
  return starpu_hash_crc32c_be_n(key, sizeof key, 0);
}

// What a task touches (the cost model's work, StarPU's size): the strip it reads whole. Its
// only written buffer is the strip's few partial sums, so without this the policy would count
// a pass over a 16 MB strip as 9 KB of work and price it on a core as a few microseconds.
size_t strip_bytes(struct starpu_task* task, unsigned /*nimpl*/) {
  const starpu_data_handle_t z = STARPU_TASK_GET_HANDLE(task, 0);
  return size_t(starpu_matrix_get_nx(z)) * size_t(starpu_matrix_get_ny(z)) * sizeof(float);
}

struct Codelets {
  starpu_perfmodel model[2]{};
  starpu_codelet cl[2]{};
  Codelets() {
    const char* names[2] = {"height_moments", "height_first"};
    for (int k = 0; k < 2; ++k) {
      model[k].type = STARPU_HISTORY_BASED;
      model[k].symbol = names[k];
      model[k].footprint = footprint;
      model[k].size_base = strip_bytes;
      starpu_codelet_init(&cl[k]);
      cl[k].name = names[k];
      cl[k].cpu_funcs[0] = cpu_func;
      cl[k].cpu_funcs_name[0] = "heights_cpu_func";
#if defined(FNNDTPS_HAVE_CUDA)
      cl[k].cuda_funcs[0] = cuda_func;
      cl[k].cuda_flags[0] = STARPU_CUDA_ASYNC;
#elif defined(STARPU_SIMGRID)
      cl[k].cuda_funcs[0] = codelets::simulated_only;
#endif
      cl[k].nbuffers = STARPU_VARIABLE_NBUFFERS;
      cl[k].model = &model[k];
      codelets::perturb_in_simulation(cl[k]);
    }
  }
};
Codelets& codelets() {
  static Codelets instance;
  return instance;
}

void check(int rc, const char* what) {
  if (rc == 0) return;
  std::fprintf(stderr, "heights: %s failed: %s\n", what, std::strerror(-rc));
  std::abort();
}

}  // namespace

Pass::Pass(std::size_t strips, bool first, bool mark, double mean)
    : first_(first), mark_(mark), mean_(mean), parts_(strips * kParts), out_(strips, nullptr) {}

Pass::~Pass() {
  for (starpu_data_handle_t h : out_)
    if (h) starpu_data_unregister(h);
}

void Pass::submit(std::size_t k, const StripData& d, int priority) {
  starpu_vector_data_register(&out_[k], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&parts_[k * kParts]), kParts,
                              sizeof(Partial));
  Args* a = static_cast<Args*>(std::malloc(sizeof(Args)));  // STARPU_CL_ARGS frees it
  *a = Args{first_, mark_, d.residual != nullptr, d.mask != nullptr, mean_};
  starpu_data_descr descr[4];
  int n = 0;
  descr[n++] = {d.z, first_ && mark_ && d.mask ? STARPU_RW : STARPU_R};
  if (d.residual) descr[n++] = {d.residual, STARPU_RW};
  if (d.mask) descr[n++] = {d.mask, STARPU_R};
  descr[n++] = {out_[k], STARPU_W};
  check(starpu_task_insert(&codelets().cl[first_ ? 1 : 0], STARPU_DATA_MODE_ARRAY, descr, n, STARPU_CL_ARGS, a,
                           sizeof(Args), STARPU_PRIORITY, priority, STARPU_NAME, codelets().cl[first_ ? 1 : 0].name,
                           0),
        "starpu_task_insert");
}

void Pass::submit_all(const std::vector<StripData>& d, int priority) {
  for (std::size_t k = 0; k < d.size(); ++k) submit(k, d[k], priority);
}

Partial Pass::total() {
  for (starpu_data_handle_t& h : out_) {
    if (!h) {
      std::fprintf(stderr, "heights: a pass was totalled with a strip not submitted\n");
      std::abort();
    }
    starpu_data_unregister(h);  // waits for the strip's task and brings its parts home
    h = nullptr;
  }
  Partial t;
  for (const Partial& q : parts_) add_part(t, q);
  return t;
}

std::vector<StripData> register_strips(float* z, const unsigned char* mask, int cols, const std::vector<int>& row0,
                                       const std::vector<int>& rows) {
  std::vector<StripData> strips(row0.size());
  for (std::size_t k = 0; k < row0.size(); ++k) {
    const std::size_t at = std::size_t(row0[k]) * std::size_t(cols);
    starpu_matrix_data_register(&strips[k].z, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(z + at), uint32_t(cols),
                                uint32_t(cols), uint32_t(rows[k]), sizeof(float));
    if (mask)
      starpu_matrix_data_register(&strips[k].mask, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(mask + at),
                                  uint32_t(cols), uint32_t(cols), uint32_t(rows[k]), 1);
  }
  return strips;
}

void unregister_no_copy(std::vector<StripData>& strips) {
  for (StripData& d : strips)
    for (starpu_data_handle_t* h : {&d.z, &d.residual, &d.mask})
      if (*h) {
        starpu_data_unregister_no_coherency(*h);
        *h = nullptr;
      }
}

}  // namespace heights
