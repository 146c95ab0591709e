#include "http/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstring>
#include <optional>

#include "common/base64.h"

namespace accel::http {
namespace {

bool StartsWithBasic(std::string_view s) {
  static constexpr std::string_view kPrefix = "basic ";
  if (s.size() < kPrefix.size()) return false;
  for (size_t i = 0; i < kPrefix.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != kPrefix[i]) return false;
  }
  return true;
}

}  // namespace

BasicAuthenticator::BasicAuthenticator(std::map<std::string, std::string> users)
    : users_(std::move(users)), crypt_(std::make_unique<crypt_data>()) {}

BasicAuthenticator::~BasicAuthenticator() = default;

bool BasicAuthenticator::Verify(std::string_view authorization) {
  if (users_.empty()) return true;
  if (!StartsWithBasic(authorization)) return false;
  std::optional<std::string> decoded = DecodeBase64(authorization.substr(6), Base64Rules::kStrict);
  if (!decoded) return false;
  const size_t colon = decoded->find(':');
  if (colon == std::string::npos) return false;
  const std::string user = decoded->substr(0, colon);
  const std::string password = decoded->substr(colon + 1);

  auto it = users_.find(user);
  const bool known = it != users_.end();
  // An unknown user is checked against a real hash anyway, so it takes as long as a known one.
  const std::string& hash = known ? it->second : users_.begin()->second;

  Digest digest;
  std::string keyed(authorization);
  keyed.push_back('\0');
  keyed += hash;
  unsigned int len = 0;
  if (EVP_Digest(keyed.data(), keyed.size(), digest.data(), &len, EVP_sha256(), nullptr) != 1) {
    return false;
  }
  OPENSSL_cleanse(keyed.data(), keyed.size());
  if (known && Cached(digest)) return true;

  const bool ok = Bcrypt(password, hash) && known;
  if (ok) Remember(digest);
  return ok;
}

bool BasicAuthenticator::Cached(const Digest& digest) {
  std::lock_guard<std::mutex> lock(cache_mu_);
  // Look at every slot and compare in constant time: no early exit tells which slot matched.
  int hit = 0;
  for (size_t i = 0; i < cache_used_; ++i) {
    hit |= CRYPTO_memcmp(cache_[i].data(), digest.data(), digest.size()) == 0;
  }
  return hit != 0;
}

void BasicAuthenticator::Remember(const Digest& digest) {
  std::lock_guard<std::mutex> lock(cache_mu_);
  cache_[cache_next_] = digest;
  cache_next_ = (cache_next_ + 1) % kCacheSlots;
  if (cache_used_ < kCacheSlots) ++cache_used_;
}

bool BasicAuthenticator::Bcrypt(const std::string& password, const std::string& hash) {
  // crypt_r stops at a NUL; a password with one would be checked only up to it.
  const bool has_nul = password.find('\0') != std::string::npos;
  std::lock_guard<std::mutex> lock(bcrypt_mu_);
  ++bcrypt_runs_;
  std::memset(crypt_.get(), 0, sizeof(crypt_data));
  const char* out = crypt_r(password.c_str(), hash.c_str(), crypt_.get());
  bool match = out != nullptr && std::strlen(out) == hash.size() &&
               CRYPTO_memcmp(out, hash.data(), hash.size()) == 0;
  OPENSSL_cleanse(crypt_.get(), sizeof(crypt_data));
  return match && !has_nul;
}

}  // namespace accel::http
