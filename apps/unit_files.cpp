#include "apps/unit_files.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>

namespace apps {

UnitStream::UnitStream(int rows, int chunk_rows, ReadRows read, WriteUnit write, unsigned readers, unsigned writers)
    : rows_(rows), chunk_(std::max(1, chunk_rows)), read_(std::move(read)), write_(std::move(write)),
      writers_(readers == 0 ? 0 : writers) {
  STARPU_PTHREAD_MUTEX_INIT(&m_, NULL);
  STARPU_PTHREAD_COND_INIT(&cv_, NULL);
  if (!read_) {
    rows_read_ = rows_;
  } else {
    done_.assign(std::size_t((rows_ + chunk_ - 1) / chunk_), 0);
    if (readers == 0) read_chunks(0, 1);
    for (unsigned t = 0; t < readers; ++t) threads_.emplace_back(&UnitStream::read_chunks, this, t, readers);
  }
  for (unsigned t = 0; t < writers_; ++t) threads_.emplace_back(&UnitStream::write_units, this);
}

UnitStream::~UnitStream() {
  try {
    finish();
  } catch (...) {  // the caller's finish() has reported it, or the caller is unwinding
  }
  STARPU_PTHREAD_COND_DESTROY(&cv_);
  STARPU_PTHREAD_MUTEX_DESTROY(&m_);
}

void UnitStream::fail(std::exception_ptr e) {
  if (!error_) error_ = e;
}

bool UnitStream::failed() {
  STARPU_PTHREAD_MUTEX_LOCK(&m_);
  const bool f = error_ != nullptr || closing_;
  STARPU_PTHREAD_MUTEX_UNLOCK(&m_);
  return f;
}

// Reader t reads chunks t, t + readers, ...; the rows read grow over the chunks done without a
// gap, and each fill they now cover is released. After an error the rest counts as read, so
// that no unit waits for rows that will not come.
void UnitStream::read_chunks(unsigned t, unsigned readers) {
  for (std::size_t c = t; c < done_.size(); c += readers) {
    const int row0 = int(c) * chunk_, n = std::min(chunk_, rows_ - row0);
    std::exception_ptr why;
    if (!failed()) try {
        read_(row0, n);
      } catch (...) {
        why = std::current_exception();
      }
    std::vector<Fill*> ready;
    STARPU_PTHREAD_MUTEX_LOCK(&m_);
    done_[c] = 1;
    if (why) fail(why);
    if (error_ || closing_) {
      rows_read_ = rows_;
    } else {
      std::size_t next = std::size_t(rows_read_ / chunk_);
      while (next < done_.size() && done_[next]) ++next;
      rows_read_ = std::min(rows_, int(next) * chunk_);
    }
    auto covered = [&](Fill* f) { return f->end_row <= rows_read_; };
    std::copy_if(waiting_.begin(), waiting_.end(), std::back_inserter(ready), covered);
    waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), covered), waiting_.end());
    STARPU_PTHREAD_MUTEX_UNLOCK(&m_);
    for (Fill* f : ready) starpu_data_release(f->h);
  }
}

void UnitStream::filled(void* arg) {
  Fill* f = static_cast<Fill*>(arg);
  UnitStream* s = f->stream;
  STARPU_PTHREAD_MUTEX_LOCK(&s->m_);
  const bool now = f->end_row <= s->rows_read_;
  if (!now) s->waiting_.push_back(f);
  STARPU_PTHREAD_MUTEX_UNLOCK(&s->m_);
  if (now) starpu_data_release(f->h);
}

void UnitStream::write_one(const Drain& d) {
  std::exception_ptr why;
  if (!failed()) try {
      write_(d.unit);
    } catch (...) {
      why = std::current_exception();
    }
  if (why) {
    STARPU_PTHREAD_MUTEX_LOCK(&m_);
    fail(why);
    STARPU_PTHREAD_MUTEX_UNLOCK(&m_);
  }
  starpu_data_release(d.h);
}

// The callback runs on the thread that brought the strip home (a worker's): it only queues it.
void UnitStream::drained(void* arg) {
  Drain* d = static_cast<Drain*>(arg);
  UnitStream* s = d->stream;
  if (s->writers_ == 0) return s->write_one(*d);
  STARPU_PTHREAD_MUTEX_LOCK(&s->m_);
  s->queue_.push_back(d);
  STARPU_PTHREAD_COND_SIGNAL(&s->cv_);
  STARPU_PTHREAD_MUTEX_UNLOCK(&s->m_);
}

void UnitStream::write_units() {
  for (;;) {
    STARPU_PTHREAD_MUTEX_LOCK(&m_);
    while (queue_.empty() && !closing_) STARPU_PTHREAD_COND_WAIT(&cv_, &m_);
    if (queue_.empty()) {
      STARPU_PTHREAD_MUTEX_UNLOCK(&m_);
      return;
    }
    Drain* d = queue_.front();
    queue_.pop_front();
    STARPU_PTHREAD_MUTEX_UNLOCK(&m_);
    write_one(*d);
  }
}

const lwt::UnitFiles& UnitStream::hooks(const lwt::Plan& plan) {
  if (plan.height() != rows_) throw std::logic_error("UnitStream: a plan of another height");
  fills_.assign(std::size_t(plan.units()), Fill{this, 0, nullptr});
  drains_.assign(std::size_t(plan.units()), Drain{this, 0, nullptr});
  hooks_ = {};
  if (read_)
    hooks_.fill = [this, &plan](int k, starpu_data_handle_t h) {
      Fill& f = fills_[std::size_t(k)];
      f.end_row = plan.unit_row0(0, k) + plan.unit_rows(0, k);
      f.h = h;
      STARPU_CHECK_RETURN_VALUE(starpu_data_acquire_cb(h, STARPU_W, &UnitStream::filled, &f), "starpu_data_acquire_cb");
    };
  hooks_.drain = [this](int k, starpu_data_handle_t h) {
    Drain& d = drains_[std::size_t(k)];
    d.unit = k;
    d.h = h;
    STARPU_CHECK_RETURN_VALUE(starpu_data_acquire_cb(h, STARPU_R, &UnitStream::drained, &d), "starpu_data_acquire_cb");
  };
  return hooks_;
}

void UnitStream::finish() {
  STARPU_PTHREAD_MUTEX_LOCK(&m_);
  closing_ = true;
  STARPU_PTHREAD_COND_BROADCAST(&cv_);
  STARPU_PTHREAD_MUTEX_UNLOCK(&m_);
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  STARPU_PTHREAD_MUTEX_LOCK(&m_);
  const std::exception_ptr why = error_;
  error_ = nullptr;
  STARPU_PTHREAD_MUTEX_UNLOCK(&m_);
  if (why) std::rethrow_exception(why);
}

void write_unit(const lwt::Plan& plan, int k, bool mallat, const float* units_layout, io::NpyRows& file) {
  const std::size_t W = std::size_t(plan.width());
  const float* unit = units_layout + std::size_t(plan.unit_row0(0, k)) * W;
  if (!mallat) return file.write(plan.unit_row0(0, k), plan.unit_rows(0, k), unit);
  for (const lwt::Plan::Block& b : plan.unit_mallat_blocks(k))
    file.write(b.row0, b.rows, b.col0, b.cols, unit + std::size_t(b.unit_row) * W + std::size_t(b.col0), W);
}

}  // namespace apps
