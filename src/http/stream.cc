#include "http/stream.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>

namespace accel::http {
namespace {

using std::chrono::milliseconds;

int SocketOf(BIO* bio) { return static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(bio))); }

// OpenSSL's own socket BIO writes with write(2), which raises SIGPIPE when the scraper has hung
// up; this one sends with MSG_NOSIGNAL.
int BioWrite(BIO* bio, const char* data, int size) {
  BIO_clear_retry_flags(bio);
  ssize_t n = send(SocketOf(bio), data, static_cast<size_t>(size), MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    BIO_set_retry_write(bio);
  }
  return static_cast<int>(n);
}

int BioRead(BIO* bio, char* data, int size) {
  BIO_clear_retry_flags(bio);
  ssize_t n = recv(SocketOf(bio), data, static_cast<size_t>(size), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    BIO_set_retry_read(bio);
  }
  return static_cast<int>(n);
}

int BioPuts(BIO* bio, const char* text) {
  return BioWrite(bio, text, static_cast<int>(std::char_traits<char>::length(text)));
}

long BioCtrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

// Built on the first TLS connection only, so a plain server never touches OpenSSL; never freed
// (one small object per process).
BIO_METHOD* NoSigpipeSocketMethod() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "accel socket");
    if (m == nullptr) return m;
    BIO_meth_set_write(m, BioWrite);
    BIO_meth_set_read(m, BioRead);
    BIO_meth_set_puts(m, BioPuts);
    BIO_meth_set_ctrl(m, BioCtrl);
    return m;
  }();
  return method;
}

int MillisecondsUntil(HttpStream::Clock::time_point deadline) {
  auto left = std::chrono::ceil<milliseconds>(deadline - HttpStream::Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

}  // namespace

HttpStream::~HttpStream() { Close(false); }

HttpStream::Wait HttpStream::WaitFor(short events, Clock::time_point deadline,
                                     bool watch_stop) const {
  pollfd fds[2] = {{fd_, events, 0}, {stop_fd_, POLLIN, 0}};
  for (;;) {
    int n = poll(fds, watch_stop ? 2 : 1, MillisecondsUntil(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Wait::kTimedOut;
    // Data that is already there is served even while stopping.
    if (fds[0].revents != 0) return Wait::kReady;
    if (watch_stop && fds[1].revents != 0) return Wait::kStopped;
    if (n == 0) return Wait::kTimedOut;
  }
}

bool HttpStream::AcceptTls(SSL_CTX* ctx, Clock::time_point deadline) {
  BIO_METHOD* method = NoSigpipeSocketMethod();
  if (method == nullptr) return false;
  ssl_ = SSL_new(ctx);
  BIO* bio = BIO_new(method);
  if (ssl_ == nullptr || bio == nullptr) {
    BIO_free(bio);
    tls_broken_ = true;
    ERR_clear_error();
    return false;
  }
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd_)));
  BIO_set_init(bio, 1);
  SSL_set_bio(ssl_, bio, bio);  // ssl_ owns it now
  // Partial writes let Write resume a large body where the kernel stopped taking it; idle
  // kept-alive connections give their 2 x 16 KiB record buffers back.
  SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                         SSL_MODE_RELEASE_BUFFERS);
  for (;;) {
    ERR_clear_error();
    int rc = SSL_accept(ssl_);
    if (rc == 1) return true;
    int err = SSL_get_error(ssl_, rc);
    short events = err == SSL_ERROR_WANT_READ ? POLLIN : err == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
    if (events == 0 || WaitFor(events, deadline, true) != Wait::kReady) break;
  }
  tls_broken_ = true;
  ERR_clear_error();
  return false;
}

size_t HttpStream::Read(char* buf, size_t size, Clock::time_point deadline, bool watch_stop) {
  if (fd_ < 0 || size == 0) return 0;
  for (;;) {
    short events = POLLIN;
    if (ssl_ == nullptr) {
      ssize_t n = recv(fd_, buf, size, 0);
      if (n > 0) return static_cast<size_t>(n);
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return 0;
    } else {
      ERR_clear_error();
      size_t got = 0;
      if (SSL_read_ex(ssl_, buf, size, &got) == 1) return got;
      int err = SSL_get_error(ssl_, 0);
      if (err == SSL_ERROR_WANT_WRITE) {
        events = POLLOUT;
      } else if (err != SSL_ERROR_WANT_READ) {
        tls_broken_ = err != SSL_ERROR_ZERO_RETURN;
        ERR_clear_error();
        return 0;
      }
    }
    if (WaitFor(events, deadline, watch_stop) != Wait::kReady) return 0;
  }
}

bool HttpStream::Write(iovec* iov, int count, milliseconds stall) {
  if (fd_ < 0) return false;
  if (ssl_ != nullptr) {
    for (int i = 0; i < count; ++i) {
      if (!WriteTls(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len, stall)) {
        return false;
      }
    }
    return true;
  }
  while (count > 0) {
    if (iov->iov_len == 0) {
      ++iov;
      --count;
      continue;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    ssize_t n = sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
      if (WaitFor(POLLOUT, Clock::now() + stall, false) != Wait::kReady) return false;
      continue;
    }
    auto left = static_cast<size_t>(n);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return true;
}

bool HttpStream::WriteTls(const char* data, size_t size, milliseconds stall) {
  while (size > 0) {
    ERR_clear_error();
    size_t written = 0;
    if (SSL_write_ex(ssl_, data, size, &written) == 1) {
      data += written;
      size -= written;
      continue;
    }
    int err = SSL_get_error(ssl_, 0);
    short events = err == SSL_ERROR_WANT_READ ? POLLIN : err == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
    if (events == 0 || WaitFor(events, Clock::now() + stall, false) != Wait::kReady) {
      tls_broken_ = true;
      ERR_clear_error();
      return false;
    }
  }
  return true;
}

void HttpStream::Close(bool drain) {
  if (fd_ < 0) return;
  if (ssl_ != nullptr) {
    if (!tls_broken_) {
      ERR_clear_error();
      SSL_shutdown(ssl_);  // sends close_notify; not waiting for the peer's
    }
    SSL_free(ssl_);
    ssl_ = nullptr;
    ERR_clear_error();
  }
  if (drain && shutdown(fd_, SHUT_WR) == 0) {
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(1);
    char sink[4096];
    for (size_t total = 0; total < (1u << 20);) {
      ssize_t n = recv(fd_, sink, sizeof(sink), 0);
      if (n > 0) {
        total += static_cast<size_t>(n);
      } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ||
                 WaitFor(POLLIN, deadline, false) != Wait::kReady) {
        break;
      }
    }
  }
  close(fd_);
  fd_ = -1;
}

}  // namespace accel::http
