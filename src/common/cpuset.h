// CpuSet: a set of CPU (PU) OS indexes, stored as a bitmap.
//
// The compact text form is the one Linux, libvirt and Nova use: "0-3,8,10-11".
// Value type; not synchronized (copy it across threads). Sets of CPUs below 512 live inline (no
// heap allocation), which keeps the placement engine's inner loops allocation-free.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace accel {

class CpuSet {
 public:
  /// The largest CPU id a set holds (and Parse accepts).
  static constexpr int kMaxCpu = 65535;

  CpuSet() = default;
  CpuSet(std::initializer_list<int> cpus);

  /// Parses "0-3,8,^2" (a leading ^ removes; whitespace ignored; empty string is the empty set).
  /// Returns true and fills *out on success; on error returns false and sets *error to
  /// a sentence naming the offending token. CPU ids must be in [0, kMaxCpu].
  static bool Parse(std::string_view text, CpuSet* out, std::string* error);

  void Add(int cpu);
  void Remove(int cpu);
  bool Contains(int cpu) const;
  int Count() const;
  bool Empty() const { return Count() == 0; }
  /// Smallest member, or -1 when empty.
  int First() const;
  /// Smallest member greater than `cpu`, or -1 when none: `for (int c = s.First(); c >= 0;
  /// c = s.Next(c))` walks the set in ascending order without allocating.
  int Next(int cpu) const;

  CpuSet Union(const CpuSet& other) const;
  CpuSet Intersect(const CpuSet& other) const;
  CpuSet Minus(const CpuSet& other) const;
  bool Intersects(const CpuSet& other) const;
  /// |this ∩ a|, and |this ∩ a − b|, without building the sets (hot paths count a lot).
  int CountIntersect(const CpuSet& a) const;
  int CountIntersectMinus(const CpuSet& a, const CpuSet& b) const;
  bool IsSubsetOf(const CpuSet& other) const;

  /// Members in ascending order.
  std::vector<int> ToVector() const;
  /// Compact form, ascending, ranges of 2+ as "a-b": {0,1,2,5} -> "0-2,5"; empty set -> "".
  std::string ToString() const;

  bool operator==(const CpuSet& other) const;
  bool operator!=(const CpuSet& other) const { return !(*this == other); }

 private:
  static constexpr uint32_t kInlineWords = 8;
  const uint64_t* data() const { return big_.empty() ? small_ : big_.data(); }
  uint64_t* data() { return big_.empty() ? small_ : big_.data(); }
  void Resize(uint32_t words);  // grows (zero-filled) or shrinks the words in use
  void Trim();

  // Bit i of word w is CPU 64*w+i. Words [0, n_) are in use and the last one is non-zero;
  // they sit in small_ while n_ <= kInlineWords, else in big_.
  uint64_t small_[kInlineWords] = {};
  std::vector<uint64_t> big_;
  uint32_t n_ = 0;
};

}  // namespace accel
