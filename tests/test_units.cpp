// scheduler/units.hpp: the first task that touches any of a unit's handles places the unit; a
// later task that touches one of them follows; units of an earlier batch count as absent.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "scheduler/units.hpp"

namespace {

using sched::UnitTable;

const void* fake(std::uintptr_t i) { return reinterpret_cast<const void*>(i * 64); }

struct Table {
  UnitTable t;
  std::atomic<long> seen{0};
  std::vector<std::size_t> assigned;  // the k each new unit was assigned with
  // A plan of 2 CPU units then GPU units, as dtps_dispatch::unit_class gives them.
  UnitTable::Place place(std::vector<const void*> h, int batch, bool* crossing = nullptr) {
    bool cross = false;
    const UnitTable::Place p = t.place_of(h.data(), h.size(), batch, seen, [&](std::size_t k) {
      assigned.push_back(k);
      return UnitTable::Place{k < 2 ? 0 : 1, -1};
    }, cross);
    if (crossing) *crossing = cross;
    return p;
  }
};

}  // namespace

TEST(UnitTable, TheFirstTaskPlacesAUnitAndLaterOnesFollow) {
  Table u;
  EXPECT_EQ(u.place({fake(1), fake(2)}, 0).cls, 0);  // unit 0: CPU class
  EXPECT_EQ(u.place({fake(3), fake(4)}, 0).cls, 0);  // unit 1: CPU class
  EXPECT_EQ(u.place({fake(5)}, 0).cls, 1);           // unit 2: GPU class
  // A later task of unit 0 (its second handle and a new one): unit 0's place, no new unit.
  EXPECT_EQ(u.place({fake(2), fake(9)}, 0).cls, 0);
  EXPECT_EQ(u.assigned, (std::vector<std::size_t>{0, 1, 2}));
  // The new handle joined unit 0.
  EXPECT_EQ(u.place({fake(9)}, 0).cls, 0);
}

TEST(UnitTable, ATaskAcrossTwoClassesSaysSo) {
  Table u;
  u.place({fake(1)}, 0);  // CPU
  u.place({fake(2)}, 0);  // CPU
  u.place({fake(3)}, 0);  // GPU
  bool crossing = false;
  EXPECT_EQ(u.place({fake(1), fake(3)}, 0, &crossing).cls, 0) << "the first placed handle's place";
  EXPECT_TRUE(crossing);
  u.place({fake(1), fake(2)}, 0, &crossing);
  EXPECT_FALSE(crossing);
}

TEST(UnitTable, AnEarlierBatchsEntriesCountAsAbsent) {
  Table u;
  u.place({fake(1)}, 0);
  u.place({fake(2)}, 0);
  EXPECT_EQ(u.place({fake(3)}, 0).cls, 1);
  // Batch 1: fake(3) is a new unit (the 4th seen: GPU), not batch 0's.
  u.seen = 0;
  EXPECT_EQ(u.place({fake(3)}, 1).cls, 0) << "a new unit of batch 1 (k = 0: CPU)";
}
