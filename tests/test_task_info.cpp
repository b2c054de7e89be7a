// scheduler/task_info.hpp's accumulators over Buffer records: a task's work, its data bytes
// (seed 001's DA) and its unit, as the policy reads them for every push.
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>

#include "scheduler/task_info.hpp"

namespace ti = sched::task_info;

namespace {

starpu_data_handle_t fake(std::uintptr_t i) { return reinterpret_cast<starpu_data_handle_t>(i * 64); }
ti::Buffer in(std::uintptr_t i, double bytes) { return {fake(i), bytes, true, false}; }
ti::Buffer out(std::uintptr_t i, double bytes) { return {fake(i), bytes, false, true}; }
ti::Buffer inout(std::uintptr_t i, double bytes) { return {fake(i), bytes, true, true}; }

double work(std::initializer_list<ti::Buffer> bs) {
  ti::Work w;
  for (const auto& b : bs) w.add(b);
  return w.value();
}

ti::Unit unit(std::initializer_list<ti::Buffer> bs) {
  double largest = 0;
  for (const auto& b : bs) largest = std::max(largest, b.bytes);
  ti::UnitPicker pick(largest);
  for (const auto& b : bs) pick.add(b);
  return pick.value();
}

}  // namespace

TEST(TaskInfo, WorkIsTheLargestWrittenBufferElseWhatIsRead) {
  // A strip's pass: reads its strip and halos, writes one strip: the strip's bytes.
  EXPECT_EQ(work({in(1, 100), in(2, 4), in(3, 4), out(4, 100)}), 100);
  EXPECT_EQ(work({inout(1, 30), out(2, 70), in(3, 500)}), 70) << "the largest written, not the sum";
  EXPECT_EQ(work({in(1, 30), in(2, 70)}), 100) << "a task that writes nothing: what it reads";
  EXPECT_EQ(work({}), 1) << "no data: one";
}

TEST(TaskInfo, DataBytesCountReadsInAndWritesOut) {
  ti::DataBytes d;
  for (const auto& b : {in(1, 10), out(2, 20), inout(3, 5)}) d.add(b);
  EXPECT_EQ(d.da, 10 + 20 + 2 * 5);
}

TEST(TaskInfo, AUnitIsTheLargeHandlesOfATaskThatWritesOne) {
  // A vertical pass: reads its strip B (100) and two halos (4), writes C (100): {B, C}.
  const ti::Unit u = unit({in(1, 100), out(2, 100), in(3, 4), in(4, 4)});
  ASSERT_EQ(u.n, 2u);
  EXPECT_EQ(u.h[0], fake(1));
  EXPECT_EQ(u.h[1], fake(2));
  // A quarter of the largest is still the unit's (a strip's half-size band); below it is not.
  EXPECT_EQ(unit({inout(1, 100), in(2, 25), in(3, 24.9)}).n, 2u);
  // Writes only a small handle (a halo): it owns no unit.
  EXPECT_EQ(unit({in(1, 100), out(2, 4)}).n, 0u);
  // Reads only: no unit either.
  EXPECT_EQ(unit({in(1, 100), in(2, 100)}).n, 0u);
}

TEST(TaskInfo, AUnitKeepsItsFirstHandlesUpToTheLimit) {
  ti::UnitPicker pick(10);
  for (std::uintptr_t i = 1; i <= ti::Unit::kMaxHandles + 3; ++i) pick.add(inout(i, 10));
  const ti::Unit u = pick.value();
  ASSERT_EQ(u.n, ti::Unit::kMaxHandles);
  EXPECT_EQ(u.h[ti::Unit::kMaxHandles - 1], fake(ti::Unit::kMaxHandles));
}
