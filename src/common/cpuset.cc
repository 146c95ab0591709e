#include "common/cpuset.h"

#include <algorithm>
#include <bit>
#include <charconv>

namespace accel {

namespace {
constexpr int kMaxCpu = 65535;

bool ParseInt(std::string_view s, int* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && *out >= 0 && *out <= kMaxCpu;
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
               "' is not a CPU number or range a-b (0.." + std::to_string(kMaxCpu) + ")";
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

void CpuSet::Add(int cpu) {
  size_t w = static_cast<size_t>(cpu) / 64;
  if (words_.size() <= w) words_.resize(w + 1, 0);
  words_[w] |= uint64_t{1} << (cpu % 64);
}

void CpuSet::Remove(int cpu) {
  size_t w = static_cast<size_t>(cpu) / 64;
  if (w >= words_.size()) return;
  words_[w] &= ~(uint64_t{1} << (cpu % 64));
  Trim();
}

bool CpuSet::Contains(int cpu) const {
  if (cpu < 0) return false;
  size_t w = static_cast<size_t>(cpu) / 64;
  return w < words_.size() && (words_[w] >> (cpu % 64)) & 1;
}

int CpuSet::Count() const {
  int n = 0;
  for (uint64_t w : words_) n += std::popcount(w);
  return n;
}

int CpuSet::First() const {
  for (size_t w = 0; w < words_.size(); ++w)
    if (words_[w]) return static_cast<int>(w * 64 + std::countr_zero(words_[w]));
  return -1;
}

CpuSet CpuSet::Union(const CpuSet& other) const {
  CpuSet r = words_.size() >= other.words_.size() ? *this : other;
  const CpuSet& s = words_.size() >= other.words_.size() ? other : *this;
  for (size_t i = 0; i < s.words_.size(); ++i) r.words_[i] |= s.words_[i];
  return r;
}

CpuSet CpuSet::Intersect(const CpuSet& other) const {
  CpuSet r;
  r.words_.resize(std::min(words_.size(), other.words_.size()));
  for (size_t i = 0; i < r.words_.size(); ++i) r.words_[i] = words_[i] & other.words_[i];
  r.Trim();
  return r;
}

CpuSet CpuSet::Minus(const CpuSet& other) const {
  CpuSet r = *this;
  for (size_t i = 0; i < std::min(r.words_.size(), other.words_.size()); ++i)
    r.words_[i] &= ~other.words_[i];
  r.Trim();
  return r;
}

bool CpuSet::Intersects(const CpuSet& other) const {
  for (size_t i = 0; i < std::min(words_.size(), other.words_.size()); ++i)
    if (words_[i] & other.words_[i]) return true;
  return false;
}

bool CpuSet::IsSubsetOf(const CpuSet& other) const { return Minus(other).Empty(); }

std::vector<int> CpuSet::ToVector() const {
  std::vector<int> out;
  for (size_t w = 0; w < words_.size(); ++w) {
    uint64_t bits = words_[w];
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

bool CpuSet::operator==(const CpuSet& other) const { return words_ == other.words_; }

void CpuSet::Trim() {
  while (!words_.empty() && words_.back() == 0) words_.pop_back();
}

}  // namespace accel
