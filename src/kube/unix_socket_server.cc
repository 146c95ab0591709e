#include "kube/unix_socket_server.h"

#include <sys/stat.h>
#include <sys/un.h>

#include <filesystem>
#include <system_error>

#include "common/error.h"

namespace accel::kube {

SocketFileId SocketFileIdOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return {};
  return {st.st_dev, st.st_ino, static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
}

void RemoveSocketFile(const std::string& path) {
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
}

UnixSocketServer ServeOnUnixSocket(const std::string& path, const std::vector<grpc::Service*>& services,
                                   const std::string& what, const std::string& fix) {
  if (path.size() >= sizeof(sockaddr_un{}.sun_path))
    throw SystemError("cannot serve " + what + " on", path, "the path is longer than a unix socket address can be", fix);
  RemoveSocketFile(path);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  for (grpc::Service* service : services) builder.RegisterService(service);
  UnixSocketServer s;
  s.server = builder.BuildAndStart();
  if (!s.server)
    throw SystemError("cannot serve " + what + " on", path, "gRPC could not bind the socket",
                      "check that the directory exists and is writable");
  s.path = path;
  s.id = SocketFileIdOf(path);
  return s;
}

void StopUnixSocketServer(UnixSocketServer& s, std::chrono::milliseconds grace, bool remove_socket) {
  if (!s.server) return;
  s.server->Shutdown(std::chrono::system_clock::now() + grace);
  s.server->Wait();
  s.server.reset();
  if (remove_socket) RemoveSocketFile(s.path);
}

}  // namespace accel::kube
