// The one way accel serves gRPC on a unix socket — the device plugin's socket, the DRA driver's
// registration and DRA sockets: a stale file at the path is removed, the path is checked against
// the unix socket address limit, gRPC binds it, and the socket file's identity is kept so a
// watcher can tell "still ours" from "deleted or replaced" (the kubelet deletes plugin sockets
// when it restarts).
//
// Free functions and a value type; thread-safe as long as one thread owns each server.
#pragma once

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace accel::kube {

/// The identity of a socket file: device, inode and change time (a file system reuses a deleted
/// file's inode number at once, so the inode alone does not tell a new socket from ours).
struct SocketFileId {
  dev_t dev = 0;          ///< st_dev
  ino_t ino = 0;          ///< st_ino
  int64_t ctime_ns = 0;   ///< st_ctim in nanoseconds
  bool operator==(const SocketFileId&) const = default;
  /// True for the id of no file (missing, or not a socket).
  bool none() const { return *this == SocketFileId{}; }
};

/// The socket at `path` as it is now; SocketFileId{} when missing or not a socket.
SocketFileId SocketFileIdOf(const std::string& path);

/// Removes the file at `path` if there is one; never throws.
void RemoveSocketFile(const std::string& path);

/// A gRPC server bound on a unix socket, and the socket file it bound.
struct UnixSocketServer {
  std::unique_ptr<grpc::Server> server;  ///< running; null after Stop
  std::string path;                      ///< the socket file
  SocketFileId id;                       ///< its identity right after binding
};

/// Serves `services` (not owned; they must outlive the server) on the unix socket `path`: removes
/// a stale file there first, then binds. `what` names the server in errors ("the device plugin",
/// "the DRA registration socket") and `fix` says what to change ("choose a shorter pluginDir").
/// Throws SystemError when the path is longer than a unix socket address holds or gRPC cannot
/// bind it (the directory is missing or not writable).
UnixSocketServer ServeOnUnixSocket(const std::string& path, const std::vector<grpc::Service*>& services,
                                   const std::string& what, const std::string& fix);

/// Shuts `s` down (in-flight calls get `grace` to finish), waits for it, removes its socket file
/// when `remove_socket`. A stopped or never-started server is left as it is.
void StopUnixSocketServer(UnixSocketServer& s, std::chrono::milliseconds grace, bool remove_socket = true);

}  // namespace accel::kube
