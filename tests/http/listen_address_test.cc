#include "http/listen_address.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace accel::http {
namespace listen_address_test {

TEST(ListenAddress, AcceptsGoStyleAddresses) {
  struct Case {
    const char* text;
    const char* host;
    int port;
  };
  for (const Case& c : {Case{":9400", "", 9400}, Case{"0.0.0.0:9400", "0.0.0.0", 9400},
                        Case{"127.0.0.1:0", "127.0.0.1", 0}, Case{"[::]:9400", "::", 9400},
                        Case{"[::1]:9400", "::1", 9400}, Case{"localhost:9400", "localhost", 9400},
                        Case{"gpu-node-1.example.com:65535", "gpu-node-1.example.com", 65535}}) {
    SCOPED_TRACE(c.text);
    ListenAddress a = ParseListenAddress(c.text);
    EXPECT_EQ(a.host, c.host);
    EXPECT_EQ(a.port, c.port);
    EXPECT_EQ(FormatListenAddress(a), c.text);
  }
}

TEST(ListenAddress, RefusesEverythingElse) {
  for (const char* text :
       {"", "9400", "localhost", ":", "localhost:", ":65536", ":99999", ":-1", ":+80", ":94 00",
        ":0x10", "::1:9400", "[::1:9400", "[::1]", "[::1]9400", "[127.0.0.1]:9400", "[nope]:80",
        "bad_host:80", "-lead.example:80", "trail-.example:80", "a..b:80", "host name:80",
        "http://localhost:9400", ":123456"}) {
    SCOPED_TRACE(text);
    try {
      ParseListenAddress(text);
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
      EXPECT_FALSE(e.hint().empty());
    }
  }
}

}  // namespace
}  // namespace accel::http
