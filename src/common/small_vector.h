// SmallVector: a vector of trivially copyable values that keeps its first N elements inline and
// moves to the heap only beyond them.
//
// The engine's per-call scratch (costs per (cell, node), chosen nodes, CPU lists) is a few dozen
// values on real hosts; keeping it inline saves the allocations that would otherwise dominate a
// sub-microsecond Place(). Inline elements are left uninitialized until written. Value type; not
// synchronized.
#pragma once

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <vector>

namespace accel {

template <class T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds plain values only");

 public:
  SmallVector() {}
  SmallVector(size_t n, const T& value) { assign(n, value); }
  SmallVector(const SmallVector& other) { *this = other; }
  SmallVector& operator=(const SmallVector& other) {
    if (this == &other) return *this;
    size_ = 0;
    Reserve(other.size_);
    std::copy(other.begin(), other.end(), data());
    size_ = other.size_;
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return on_heap_ ? heap_.data() : inline_; }
  const T* data() const { return on_heap_ ? heap_.data() : inline_; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }

  void clear() { size_ = 0; }
  void push_back(T value) {
    Reserve(size_ + 1);
    data()[size_++] = value;
  }
  void pop_back() { --size_; }
  void resize(size_t n, const T& value = T()) {
    Reserve(n);
    std::fill(data() + std::min(size_, n), data() + n, value);
    size_ = n;
  }
  void assign(size_t n, const T& value) {
    size_ = 0;
    resize(n, value);
  }

 private:
  size_t Capacity() const { return on_heap_ ? heap_.size() : N; }
  void Reserve(size_t n) {
    if (n <= Capacity()) return;
    std::vector<T> grown(std::max(n, 2 * Capacity()));
    std::copy(begin(), end(), grown.begin());
    heap_.swap(grown);
    on_heap_ = true;
  }

  // In a union so that no element is constructed up front (T may have default member
  // initializers); only [0, size_) is ever read, and every element is written before that.
  union {
    T inline_[N];
  };
  std::vector<T> heap_;
  size_t size_ = 0;
  bool on_heap_ = false;
};

}  // namespace accel
