// HttpStream: the bytes of one accepted connection, plain TCP or TLS over it, read and written
// with deadlines on a non-blocking socket. HttpServer's workers own one each.
//
// A plain stream never calls OpenSSL. Writes never raise SIGPIPE (send with MSG_NOSIGNAL, and
// TLS goes through a BIO that does the same). Reads can also watch a "stop" descriptor (an
// eventfd that becomes readable on shutdown) so an idle connection gives up at once. Not
// thread-safe: one thread uses a stream at a time.
#pragma once

#include <openssl/ssl.h>
#include <sys/uio.h>

#include <chrono>
#include <cstddef>

namespace accel::http {

class HttpStream {
 public:
  using Clock = std::chrono::steady_clock;

  /// Takes ownership of `fd` (a connected, non-blocking socket). `stop_fd` (not owned) is polled
  /// by the reads that are asked to watch it.
  HttpStream(int fd, int stop_fd) : fd_(fd), stop_fd_(stop_fd) {}
  /// Closes the connection (see Close).
  ~HttpStream();

  HttpStream(const HttpStream&) = delete;
  HttpStream& operator=(const HttpStream&) = delete;

  /// Runs the TLS server handshake with `ctx` (not owned, must outlive the stream). Returns true
  /// when the stream is now TLS; false when the handshake failed, timed out at `deadline` or was
  /// stopped; the stream is then unusable.
  bool AcceptTls(SSL_CTX* ctx, Clock::time_point deadline);

  /// Reads up to `size` bytes into `buf`. Returns how many (> 0), or 0 when the peer closed the
  /// connection, an error occurred, `deadline` passed, or (with `watch_stop`) the stop descriptor
  /// became readable before any data did.
  size_t Read(char* buf, size_t size, Clock::time_point deadline, bool watch_stop);

  /// Writes all of `iov[0..count)`, in order, without copying. Returns true when everything was
  /// handed to the kernel; false on an error or when no progress was made for `stall`.
  bool Write(iovec* iov, int count, std::chrono::milliseconds stall);

  /// Ends the connection: TLS close_notify when the session is intact, then close(2). With
  /// `drain`, first stops writing and discards what the peer still sends (up to ~1 s, 1 MiB) so
  /// a response written before unread input is not destroyed by a TCP reset. Idempotent.
  void Close(bool drain);

 private:
  enum class Wait { kReady, kTimedOut, kStopped };
  Wait WaitFor(short events, Clock::time_point deadline, bool watch_stop) const;
  bool WriteTls(const char* data, size_t size, std::chrono::milliseconds stall);

  int fd_;
  const int stop_fd_;
  SSL* ssl_ = nullptr;  // null for a plain stream
  bool tls_broken_ = false;  // after a fatal TLS error OpenSSL forbids SSL_shutdown
};

}  // namespace accel::http
