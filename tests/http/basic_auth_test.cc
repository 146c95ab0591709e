#include "http/basic_auth.h"

#include <crypt.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <thread>
#include <vector>

namespace accel::http {
namespace basic_auth_test {

// A bcrypt hash of `password` at cost 5 (fast enough for tests).
std::string Hash(const std::string& password, const char* prefix = "$2b$") {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn(prefix, 5, nullptr, 0, setting, sizeof(setting)), nullptr);
  crypt_data data{};
  return crypt_r(password.c_str(), setting, &data);
}

std::string Basic(const std::string& credentials, const std::string& scheme = "Basic") {
  std::string out(4 * ((credentials.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(credentials.data()),
                          static_cast<int>(credentials.size()));
  out.resize(static_cast<size_t>(n));
  return scheme + " " + out;
}

TEST(BasicAuth, NoUsersMeansNoAuthentication) {
  BasicAuthenticator auth({});
  EXPECT_FALSE(auth.enabled());
  EXPECT_TRUE(auth.Verify(""));
}

TEST(BasicAuth, AcceptsOnlyTheRightPassword) {
  BasicAuthenticator auth({{"alice", Hash("s3cret")}, {"bob", Hash("hunter2", "$2y$")}});
  EXPECT_TRUE(auth.enabled());
  EXPECT_TRUE(auth.Verify(Basic("alice:s3cret")));
  EXPECT_TRUE(auth.Verify(Basic("bob:hunter2")));
  EXPECT_TRUE(auth.Verify(Basic("alice:s3cret", "basic")));  // scheme is case-insensitive
  EXPECT_FALSE(auth.Verify(Basic("alice:hunter2")));
  EXPECT_FALSE(auth.Verify(Basic("alice:s3cret2")));
  EXPECT_FALSE(auth.Verify(Basic("alice:")));
  EXPECT_FALSE(auth.Verify(Basic("carol:s3cret")));
  EXPECT_FALSE(auth.Verify(Basic("alice")));
  EXPECT_FALSE(auth.Verify(Basic(std::string("alice:s3cret\0x", 14))));
  EXPECT_FALSE(auth.Verify(Basic("alice:s3cret", "Bearer")));
  EXPECT_FALSE(auth.Verify(""));
  EXPECT_FALSE(auth.Verify("Basic"));
  EXPECT_FALSE(auth.Verify("Basic !!!!"));
  ASSERT_EQ(Basic("bob:hunter2"), "Basic Ym9iOmh1bnRlcjI=");
  EXPECT_FALSE(auth.Verify("Basic Ym9iOmh1bnRlcjI"));  // padding is required, as in Go
  EXPECT_FALSE(auth.Verify(Basic("alice:s3cret") + "="));
}

TEST(BasicAuth, PasswordsMayContainColons) {
  BasicAuthenticator auth({{"alice", Hash("a:b:c")}});
  EXPECT_TRUE(auth.Verify(Basic("alice:a:b:c")));
}

TEST(BasicAuth, RemembersSuccessesNotFailures) {
  BasicAuthenticator auth({{"alice", Hash("s3cret")}});
  EXPECT_TRUE(auth.Verify(Basic("alice:s3cret")));
  EXPECT_EQ(auth.bcrypt_runs(), 1u);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(auth.Verify(Basic("alice:s3cret")));
  EXPECT_EQ(auth.bcrypt_runs(), 1u);
  EXPECT_FALSE(auth.Verify(Basic("alice:wrong")));
  EXPECT_FALSE(auth.Verify(Basic("alice:wrong")));
  EXPECT_EQ(auth.bcrypt_runs(), 3u);
  // An unknown user still pays for a bcrypt run (no timing hint that the user is missing).
  EXPECT_FALSE(auth.Verify(Basic("mallory:s3cret")));
  EXPECT_EQ(auth.bcrypt_runs(), 4u);
}

TEST(BasicAuth, ManyScrapersEvictOldestCacheEntries) {
  std::map<std::string, std::string> users;
  const std::string hash = Hash("pw");
  for (int i = 0; i < 70; ++i) users["u" + std::to_string(i)] = hash;
  BasicAuthenticator auth(users);
  for (int i = 0; i < 70; ++i) EXPECT_TRUE(auth.Verify(Basic("u" + std::to_string(i) + ":pw")));
  EXPECT_EQ(auth.bcrypt_runs(), 70u);
  EXPECT_TRUE(auth.Verify(Basic("u69:pw")));  // recent: cached
  EXPECT_EQ(auth.bcrypt_runs(), 70u);
  EXPECT_TRUE(auth.Verify(Basic("u0:pw")));  // evicted: checked again
  EXPECT_EQ(auth.bcrypt_runs(), 71u);
}

TEST(BasicAuth, IsThreadSafe) {
  BasicAuthenticator auth({{"alice", Hash("s3cret")}, {"bob", Hash("pw")}});
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        bool good = (i + t) % 3 != 0;
        std::string header = t % 2 ? Basic(good ? "alice:s3cret" : "alice:x")
                                   : Basic(good ? "bob:pw" : "bob:y");
        if (auth.Verify(header) != good) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace accel::http
