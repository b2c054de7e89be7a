// The CUDA backend of tests/test_lifting.cpp: host buffers in, lwt::cuda on the device, host
// buffers out. Every distinct buffer gets one device copy, so passing a buffer twice (in place)
// passes one device pointer twice; after the call every buffer is copied back, inputs included,
// which lets the tests check that inputs stay untouched on the device too.
#include <map>
#include <utility>

#include "codelets/cuda/check.hpp"
#include "codelets/cuda/lifting_cuda.hpp"
#include "tests/test_lifting_backends.hpp"

namespace lwt_test {
namespace {

template <typename T>
class Session {
 public:
  Session() { FNNDTPS_CUDA_CHECK(cudaStreamCreate(&stream_)); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() {
    FNNDTPS_CUDA_CHECK(cudaStreamSynchronize(stream_));
    FNNDTPS_CUDA_CHECK(cudaGetLastError());
    for (auto& [host, dev] : bufs_) {
      auto* h = const_cast<Buf<T>*>(host);
      FNNDTPS_CUDA_CHECK(cudaMemcpy(h->data(), dev, h->size() * sizeof(T), cudaMemcpyDeviceToHost));
      FNNDTPS_CUDA_CHECK(cudaFree(dev));
    }
    FNNDTPS_CUDA_CHECK(cudaStreamDestroy(stream_));
  }
  T* dev(const Buf<T>& host) {
    auto it = bufs_.find(&host);
    if (it != bufs_.end()) return it->second;
    T* d = nullptr;
    FNNDTPS_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d), (host.empty() ? 1 : host.size()) * sizeof(T)));
    FNNDTPS_CUDA_CHECK(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    bufs_.emplace(&host, d);
    return d;
  }
  T* dev(const Buf<T>* host) { return host ? dev(*host) : nullptr; }
  cudaStream_t stream() const { return stream_; }

 private:
  std::map<const Buf<T>*, T*> bufs_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace


template <typename T>
void CudaOps<T>::rows_forward(const Buf<T>& in, int ld_in, Buf<T>& out, int ld_out, int rows,
                              int n) {
  Session<T> s;
  lwt::cuda::rows_forward(s.dev(in), ld_in, s.dev(out), ld_out, rows, n, s.stream());
}
template <typename T>
void CudaOps<T>::rows_inverse(const Buf<T>& in, int ld_in, Buf<T>& out, int ld_out, int rows,
                              int n) {
  Session<T> s;
  lwt::cuda::rows_inverse(s.dev(in), ld_in, s.dev(out), ld_out, rows, n, s.stream());
}
template <typename T>
void CudaOps<T>::cols_forward(Buf<T>& x, int ld_x, int h, int w, const Buf<T>* above,
                              const Buf<T>* below, int ld_halo, Buf<T>& out, int ld_out) {
  Session<T> s;
  lwt::cuda::cols_forward(s.dev(x), ld_x, h, w, s.dev(above), s.dev(below), ld_halo, s.dev(out),
                          ld_out, s.stream());
}
template <typename T>
void CudaOps<T>::cols_inverse(const Buf<T>& c, int ld_c, int h, int w, const Buf<T>* above,
                              const Buf<T>* below, int ld_halo, Buf<T>& out, int ld_out) {
  Session<T> s;
  lwt::cuda::cols_inverse(s.dev(c), ld_c, h, w, s.dev(above), s.dev(below), ld_halo, s.dev(out),
                          ld_out, s.stream());
}
template <typename T>
void CudaOps<T>::rows_split(const Buf<T>& in, int ld_in, Buf<T>& out, int ld_out, int rows,
                            int n) {
  Session<T> s;
  lwt::cuda::rows_split(s.dev(in), ld_in, s.dev(out), ld_out, rows, n, s.stream());
}
template <typename T>
void CudaOps<T>::rows_merge(const Buf<T>& in, int ld_in, Buf<T>& out, int ld_out, int rows,
                            int n) {
  Session<T> s;
  lwt::cuda::rows_merge(s.dev(in), ld_in, s.dev(out), ld_out, rows, n, s.stream());
}
template <typename T>
void CudaOps<T>::rows_lift(Buf<T>& data, int ld, int rows, int n, lwt::Step step,
                           lwt::Direction dir) {
  Session<T> s;
  lwt::cuda::rows_lift(s.dev(data), ld, rows, n, step, dir, s.stream());
}
template <typename T>
void CudaOps<T>::cols_gather(const Buf<T>& x, int ld_x, int h, int w, const Buf<T>* above,
                             const Buf<T>* below, int ld_halo, Buf<T>& win, int ld_win) {
  Session<T> s;
  lwt::cuda::cols_gather(s.dev(x), ld_x, h, w, s.dev(above), s.dev(below), ld_halo, s.dev(win),
                         ld_win, s.stream());
}
template <typename T>
void CudaOps<T>::cols_lift(Buf<T>& win, int ld_win, int n_win, int w, lwt::Step step,
                           lwt::Direction dir) {
  Session<T> s;
  lwt::cuda::cols_lift(s.dev(win), ld_win, n_win, w, step, dir, s.stream());
}
template <typename T>
void CudaOps<T>::cols_scatter(const Buf<T>& win, int ld_win, int h, int w, bool above, bool below,
                              Buf<T>& out, int ld_out) {
  Session<T> s;
  lwt::cuda::cols_scatter(s.dev(win), ld_win, h, w, above, below, s.dev(out), ld_out, s.stream());
}
template <typename T>
void CudaOps<T>::cols_gather_inverse(const Buf<T>& c, int ld_c, int h, int w, const Buf<T>* above,
                                     const Buf<T>* below, int ld_halo, Buf<T>& win, int ld_win) {
  Session<T> s;
  lwt::cuda::cols_gather_inverse(s.dev(c), ld_c, h, w, s.dev(above), s.dev(below), ld_halo,
                                 s.dev(win), ld_win, s.stream());
}
template <typename T>
void CudaOps<T>::cols_scatter_inverse(const Buf<T>& win, int ld_win, int h, int w, bool above,
                                      bool below, Buf<T>& out, int ld_out) {
  Session<T> s;
  lwt::cuda::cols_scatter_inverse(s.dev(win), ld_win, h, w, above, below, s.dev(out), ld_out,
                                  s.stream());
}
template <typename T>
void CudaOps<T>::write_halos(const Buf<T>& unit, int ld, int h, int w, lwt::Direction layout,
                             Buf<T>* top, Buf<T>* bottom, int ld_halo) {
  Session<T> s;
  lwt::cuda::write_halos(s.dev(unit), ld, h, w, layout, s.dev(top), s.dev(bottom), ld_halo,
                         s.stream());
}

template <typename T>
void CudaOps<T>::copy_levels(const Buf<T>& in, int ld_in, Buf<T>& out, int ld_out, int h, int w,
                             int levels, std::uint32_t keep) {
  Session<T> s;
  lwt::cuda::copy_levels(s.dev(in), ld_in, s.dev(out), ld_out, h, w, levels, keep, s.stream());
}

template struct CudaOps<float>;
template struct CudaOps<double>;

}  // namespace lwt_test
