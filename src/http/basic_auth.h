// BasicAuthenticator: checks HTTP Basic credentials against exporter-toolkit's basic_auth_users
// (user -> bcrypt hash), with libxcrypt's crypt_r.
//
// bcrypt costs ~50 ms at cost 10, so a successful check is remembered (a SHA-256 of the header
// value and the hash, never the password) and a scraper that sends the same header every 15 s
// pays it once. Failures are not remembered. Thread-safe: cache lookups take a short lock; bcrypt
// runs one at a time, as in exporter-toolkit, so a flood of bad passwords costs one core.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

struct crypt_data;

namespace accel::http {

class BasicAuthenticator {
 public:
  /// `users`: user name -> bcrypt hash, already checked by ParseWebConfig.
  explicit BasicAuthenticator(std::map<std::string, std::string> users);
  ~BasicAuthenticator();

  BasicAuthenticator(const BasicAuthenticator&) = delete;
  BasicAuthenticator& operator=(const BasicAuthenticator&) = delete;

  /// True when users are configured, i.e. requests must authenticate.
  bool enabled() const { return !users_.empty(); }

  /// Checks an Authorization header value ("Basic <base64 user:password>"; the scheme is
  /// case-insensitive). Returns true when the user exists and the password matches its hash,
  /// or when no users are configured; false for anything else, including a malformed header.
  /// An unknown user still costs one bcrypt run, so timing does not reveal which users exist.
  bool Verify(std::string_view authorization);

  /// How many times bcrypt has run (cache misses); for tests and self-metrics.
  uint64_t bcrypt_runs() const { return bcrypt_runs_.load(); }

 private:
  using Digest = std::array<unsigned char, 32>;
  static constexpr size_t kCacheSlots = 64;

  bool Cached(const Digest& digest);
  void Remember(const Digest& digest);
  bool Bcrypt(const std::string& password, const std::string& hash);

  const std::map<std::string, std::string> users_;

  std::mutex cache_mu_;
  std::array<Digest, kCacheSlots> cache_{};  // guarded by cache_mu_
  size_t cache_used_ = 0;                    // guarded by cache_mu_
  size_t cache_next_ = 0;                    // guarded by cache_mu_

  std::mutex bcrypt_mu_;
  std::unique_ptr<crypt_data> crypt_;  // guarded by bcrypt_mu_; 32 KiB of libxcrypt scratch
  std::atomic<uint64_t> bcrypt_runs_{0};
};

}  // namespace accel::http
