#include "scheduler/task_info.hpp"

namespace sched::task_info {

double work(starpu_task* task) {
  if (task->flops > 0) return task->flops;
  Work w;
  for_each_owned(task, [&](const Buffer& b) { w.add(b); });
  return w.value();
}

double data_bytes(starpu_task* task) {
  DataBytes d;
  for_each_owned(task, [&](const Buffer& b) { d.add(b); });
  return d.da;
}

Unit unit(starpu_task* task) {
  double largest = 0;
  for_each_owned(task, [&](const Buffer& b) { largest = std::max(largest, b.bytes); });
  UnitPicker pick(largest);
  for_each_owned(task, [&](const Buffer& b) { pick.add(b); });
  return pick.value();
}

double missing_on(starpu_task* task, unsigned node) {
  double missing = 0;
  for_each_owned(task, [&](const Buffer& b) {
    if (!b.reads) return;
    int valid = 0;
    starpu_data_query_status(b.handle, int(node), nullptr,
                             &valid, nullptr);
    missing += !valid;
  });
  return missing;
}

double unallocated_bytes(starpu_task* task, unsigned node) {
  double bytes = 0;
  for_each_owned(task, [&](const Buffer& b) {
    if (!starpu_data_test_if_allocated_on_node(b.handle, node))
      bytes += b.bytes;
  });
  return bytes;
}

double unallocated_share(starpu_task* task, unsigned node) {
  double fresh = 0, all = 0;
  for_each_owned(task, [&](const Buffer& b) {
    all += b.bytes;
    if (!starpu_data_test_if_allocated_on_node(b.handle, node)) fresh += b.bytes;
  });
  return all > 0 ? fresh / all : 0;
}

}  // namespace sched::task_info
