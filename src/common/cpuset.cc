#include "common/cpuset.h"

#include <algorithm>
#include <bit>
#include <charconv>

namespace accel {

namespace {
bool ParseInt(std::string_view s, int* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && *out >= 0 && *out <= CpuSet::kMaxCpu;
}

std::string_view Strip(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}
}  // namespace

CpuSet::CpuSet(std::initializer_list<int> cpus) {
  for (int c : cpus) Add(c);
}

bool CpuSet::Parse(std::string_view text, CpuSet* out, std::string* error) {
  CpuSet add, remove;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view token = Strip(text.substr(pos, comma - pos));
    pos = comma + 1;
    if (token.empty()) {
      if (comma == text.size() && Strip(text).empty()) break;
      *error = "empty element in CPU list '" + std::string(text) + "'";
      return false;
    }
    bool exclude = token.front() == '^';
    if (exclude) token = Strip(token.substr(1));
    size_t dash = token.find('-');
    int lo = 0, hi = 0;
    bool ok = dash == std::string_view::npos
                  ? (ParseInt(token, &lo) && (hi = lo, true))
                  : ParseInt(Strip(token.substr(0, dash)), &lo) &&
                        ParseInt(Strip(token.substr(dash + 1)), &hi);
    if (!ok || lo > hi) {
      *error = "'" + std::string(token) + "' in CPU list '" + std::string(text) +
               "' is not a CPU number or range a-b (0.." + std::to_string(CpuSet::kMaxCpu) + ")";
      return false;
    }
    for (int c = lo; c <= hi; ++c) (exclude ? remove : add).Add(c);
    if (comma == text.size()) break;
  }
  // Nova's "^N" alone means "all except N" relative to a universe the caller knows;
  // here a set made only of exclusions stays empty and the caller handles the universe.
  *out = add.Minus(remove);
  return true;
}

void CpuSet::Resize(uint32_t words) {
  if (words <= kInlineWords && big_.empty()) {
    for (uint32_t i = words; i < n_; ++i) small_[i] = 0;
  } else if (big_.empty()) {  // inline -> heap
    big_.assign(small_, small_ + n_);
    big_.resize(words, 0);
    for (uint64_t& w : small_) w = 0;
  } else {
    big_.resize(std::max<size_t>(words, 1), 0);
  }
  n_ = words;
}

void CpuSet::Trim() {
  const uint64_t* d = data();
  uint32_t n = n_;
  while (n > 0 && d[n - 1] == 0) --n;
  n_ = n;
}

void CpuSet::Add(int cpu) {
  uint32_t w = static_cast<uint32_t>(cpu) / 64;
  if (w >= n_) Resize(w + 1);
  data()[w] |= uint64_t{1} << (cpu % 64);
}

void CpuSet::Remove(int cpu) {
  uint32_t w = static_cast<uint32_t>(cpu) / 64;
  if (w >= n_) return;
  data()[w] &= ~(uint64_t{1} << (cpu % 64));
  Trim();
}

bool CpuSet::Contains(int cpu) const {
  if (cpu < 0) return false;
  uint32_t w = static_cast<uint32_t>(cpu) / 64;
  return w < n_ && (data()[w] >> (cpu % 64)) & 1;
}

int CpuSet::Count() const {
  int n = 0;
  const uint64_t* d = data();
  for (uint32_t i = 0; i < n_; ++i) n += std::popcount(d[i]);
  return n;
}

int CpuSet::First() const {
  const uint64_t* d = data();
  for (uint32_t w = 0; w < n_; ++w)
    if (d[w]) return static_cast<int>(w * 64 + std::countr_zero(d[w]));
  return -1;
}

int CpuSet::Next(int cpu) const {
  const uint64_t* d = data();
  uint32_t w = static_cast<uint32_t>(cpu + 1) / 64;
  if (w >= n_) return -1;
  uint64_t bits = d[w] & (~uint64_t{0} << ((cpu + 1) % 64));
  while (true) {
    if (bits) return static_cast<int>(w * 64 + std::countr_zero(bits));
    if (++w >= n_) return -1;
    bits = d[w];
  }
}

CpuSet CpuSet::Union(const CpuSet& other) const {
  const CpuSet& big = n_ >= other.n_ ? *this : other;
  const CpuSet& small = n_ >= other.n_ ? other : *this;
  CpuSet r = big;
  uint64_t* d = r.data();
  const uint64_t* s = small.data();
  for (uint32_t i = 0; i < small.n_; ++i) d[i] |= s[i];
  return r;
}

CpuSet CpuSet::Intersect(const CpuSet& other) const {
  CpuSet r;
  const uint32_t n = std::min(n_, other.n_);
  if (n <= kInlineWords) r.n_ = n;  // fresh set: small_ is already zero
  else r.Resize(n);
  uint64_t* d = r.data();
  const uint64_t *a = data(), *b = other.data();
  for (uint32_t i = 0; i < r.n_; ++i) d[i] = a[i] & b[i];
  r.Trim();
  return r;
}

CpuSet CpuSet::Minus(const CpuSet& other) const {
  CpuSet r = *this;
  uint64_t* d = r.data();
  const uint64_t* b = other.data();
  for (uint32_t i = 0; i < std::min(r.n_, other.n_); ++i) d[i] &= ~b[i];
  r.Trim();
  return r;
}

bool CpuSet::Intersects(const CpuSet& other) const {
  const uint64_t *a = data(), *b = other.data();
  for (uint32_t i = 0; i < std::min(n_, other.n_); ++i)
    if (a[i] & b[i]) return true;
  return false;
}

int CpuSet::CountIntersect(const CpuSet& a) const {
  const uint64_t *x = data(), *y = a.data();
  int n = 0;
  for (uint32_t i = 0; i < std::min(n_, a.n_); ++i) n += std::popcount(x[i] & y[i]);
  return n;
}

int CpuSet::CountIntersectMinus(const CpuSet& a, const CpuSet& b) const {
  const uint64_t *x = data(), *y = a.data(), *z = b.data();
  int n = 0;
  for (uint32_t i = 0; i < std::min(n_, a.n_); ++i) n += std::popcount(x[i] & y[i] & ~(i < b.n_ ? z[i] : 0));
  return n;
}

bool CpuSet::IsSubsetOf(const CpuSet& other) const {
  const uint64_t *a = data(), *b = other.data();
  for (uint32_t i = 0; i < n_; ++i)
    if (a[i] & ~(i < other.n_ ? b[i] : 0)) return false;
  return true;
}

std::vector<int> CpuSet::ToVector() const {
  std::vector<int> out;
  const uint64_t* d = data();
  for (uint32_t w = 0; w < n_; ++w) {
    uint64_t bits = d[w];
    while (bits) {
      out.push_back(static_cast<int>(w * 64 + std::countr_zero(bits)));
      bits &= bits - 1;
    }
  }
  return out;
}

std::string CpuSet::ToString() const {
  std::vector<int> v = ToVector();
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(v[i]);
    if (j > i) out += '-' + std::to_string(v[j]);
    i = j + 1;
  }
  return out;
}

bool CpuSet::operator==(const CpuSet& other) const {
  return n_ == other.n_ && std::equal(data(), data() + n_, other.data());
}

}  // namespace accel
