// DevicePluginManager: a server per resource, an inotify watcher that notices kubelet restarts,
// a retry timer for servers that could not register, and a health poller.
//
// A kubelet restart deletes every socket in the plugin directory (CleanupPluginDirectory) and then
// creates a fresh kubelet.sock. Either event schedules a restart of all servers after a short
// debounce; a deletion alone only counts when one of our sockets is really gone at that moment,
// since our own restarts delete and re-create our sockets too.
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "kube/plugin_server.h"

namespace accel::kube {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kDebounce{200};
constexpr std::chrono::seconds kRetryEvery{3};
constexpr std::chrono::seconds kHealthEvery{1};
constexpr const char* kKubeletSocket = "kubelet.sock";

bool SocketExists(const std::string& path) {
  std::error_code error;
  return std::filesystem::symlink_status(path, error).type() ==
         std::filesystem::file_type::socket;
}

}  // namespace

struct DevicePluginManager::Impl {
  using Servers = std::vector<std::shared_ptr<DevicePluginServer>>;

  PluginNode node;
  std::function<void(const std::string&)> log;

  /// Serialises the manager's Start and Stop.
  std::mutex lifecycle_mu;
  /// Guards `servers` (the list is replaced only by Start).
  std::mutex list_mu;
  std::shared_ptr<const Servers> servers = std::make_shared<Servers>();
  std::set<std::string> socket_names;
  /// Guards `up`; held while servers are (re)started.
  std::mutex run_mu;
  /// Whether servers[i] is serving and registered.
  std::vector<bool> up;
  std::atomic<int> registrations{0};

  std::mutex stop_mu;
  std::condition_variable stop_cv;
  std::atomic<bool> stopping{false};
  bool started = false;
  int inotify_fd = -1;
  int watch = -1;
  int wake_fd = -1;
  std::thread watcher;
  std::thread health_poller;

  void Log(const std::string& line) const {
    if (log) log(line);
  }

  std::shared_ptr<const Servers> Snapshot() {
    std::lock_guard<std::mutex> lock(list_mu);
    return servers;
  }

  void AddWatch() {
    const std::string dir = node.config ? node.config->plugin_dir : PluginConfig().plugin_dir;
    watch = inotify_add_watch(inotify_fd, dir.c_str(),
                              IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM);
    if (watch < 0) Log("cannot watch " + dir + " for kubelet restarts; retrying");
  }

  // Needs run_mu.
  void StartOne(size_t i) {
    const DevicePluginServer& server = *(*servers)[i];
    try {
      (*servers)[i]->Start();
      up[i] = true;
      registrations.fetch_add(1);
      Log("registered " + server.resource().name + " on " + server.socket_path());
    } catch (const std::exception& e) {
      up[i] = false;
      Log(std::string(e.what()) + "; retrying in " + std::to_string(kRetryEvery.count()) + " s");
    }
  }

  void RestartAll(const std::string& reason) {
    std::lock_guard<std::mutex> lock(run_mu);
    Log(reason + ": restarting " + std::to_string(servers->size()) + " device plugin(s)");
    for (const auto& server : *servers) server->Stop();
    for (size_t i = 0; i < servers->size() && !stopping; ++i) StartOne(i);
  }

  void RetryFailed() {
    std::lock_guard<std::mutex> lock(run_mu);
    for (size_t i = 0; i < servers->size() && !stopping; ++i) {
      if (!up[i]) StartOne(i);
    }
  }

  bool AnySocketMissing() {
    std::lock_guard<std::mutex> lock(run_mu);
    for (size_t i = 0; i < servers->size(); ++i) {
      if (up[i] && !SocketExists((*servers)[i]->socket_path())) return true;
    }
    return false;
  }

  // Reads pending inotify events; returns whether one asks for a restart, and sets
  // `kubelet_restarted` when kubelet.sock appeared.
  bool ReadEvents(bool* kubelet_restarted) {
    alignas(inotify_event) char buffer[4096];
    bool restart = false;
    ssize_t n;
    while ((n = read(inotify_fd, buffer, sizeof buffer)) > 0) {
      for (char* p = buffer; p < buffer + n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(p);
        p += sizeof(inotify_event) + event->len;
        if (event->mask & IN_IGNORED) watch = -1;  // the directory went away
        std::string name = event->len > 0 ? event->name : "";
        if (name == kKubeletSocket && (event->mask & (IN_CREATE | IN_MOVED_TO))) {
          *kubelet_restarted = restart = true;
        } else if ((event->mask & (IN_DELETE | IN_MOVED_FROM)) && socket_names.count(name)) {
          restart = true;
        }
      }
    }
    return restart;
  }

  void Watch() {
    const Clock::time_point never = Clock::time_point::max();
    Clock::time_point restart_at = never;
    bool kubelet_restarted = false;
    Clock::time_point retry_at = Clock::now() + kRetryEvery;
    while (!stopping) {
      Clock::time_point until = std::min(restart_at, retry_at);
      auto wait = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
      pollfd fds[2] = {{inotify_fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
      poll(fds, 2, static_cast<int>(std::max<int64_t>(0, wait.count())));
      if (stopping) break;
      if ((fds[0].revents & POLLIN) && ReadEvents(&kubelet_restarted)) {
        restart_at = Clock::now() + kDebounce;  // the kubelet deletes sockets one by one
      }
      if (Clock::now() >= restart_at) {
        restart_at = never;
        if (kubelet_restarted || AnySocketMissing()) {
          RestartAll(kubelet_restarted ? "kubelet restarted" : "a device plugin socket was removed");
          kubelet_restarted = false;
          retry_at = Clock::now() + kRetryEvery;
        }
      }
      if (Clock::now() >= retry_at) {
        if (watch < 0) AddWatch();
        RetryFailed();
        retry_at = Clock::now() + kRetryEvery;
      }
    }
  }

  // `seen`: the generation before the servers first listed their devices.
  void PollHealth(uint64_t seen) {
    std::unique_lock<std::mutex> lock(stop_mu);
    while (!stop_cv.wait_for(lock, kHealthEvery, [&] { return stopping.load(); })) {
      lock.unlock();
      node.health->Tick(Clock::now());
      uint64_t generation = node.health->generation();
      if (generation != seen) {
        seen = generation;
        for (const auto& server : *Snapshot()) server->NotifyHealthChanged();
      }
      lock.lock();
    }
  }

  // Needs lifecycle_mu.
  void StopLocked() {
    if (!started) return;
    {
      std::lock_guard<std::mutex> lock(stop_mu);
      stopping = true;
    }
    stop_cv.notify_all();
    uint64_t one = 1;
    if (write(wake_fd, &one, sizeof one) < 0) Log("cannot wake the plugin directory watcher");
    if (watcher.joinable()) watcher.join();
    if (health_poller.joinable()) health_poller.join();
    std::lock_guard<std::mutex> lock(run_mu);
    for (size_t i = 0; i < servers->size(); ++i) {
      (*servers)[i]->Stop();
      up[i] = false;
    }
    close(inotify_fd);
    close(wake_fd);
    inotify_fd = wake_fd = watch = -1;
    started = false;
  }
};

DevicePluginManager::DevicePluginManager(PluginNode node) : impl_(std::make_unique<Impl>()) {
  impl_->node = node;
}

DevicePluginManager::~DevicePluginManager() { Stop(); }

void DevicePluginManager::Start(std::vector<PluginResource> resources,
                                std::function<void(const std::string&)> log) {
  std::lock_guard<std::mutex> lifecycle(impl_->lifecycle_mu);
  impl_->StopLocked();
  impl_->log = std::move(log);
  impl_->stopping = false;
  auto servers = std::make_shared<Impl::Servers>();
  impl_->socket_names.clear();
  for (PluginResource& resource : resources) {
    impl_->socket_names.insert(resource.socket_name);
    servers->push_back(std::make_shared<DevicePluginServer>(std::move(resource), impl_->node));
  }
  {
    std::lock_guard<std::mutex> lock(impl_->list_mu);
    impl_->servers = servers;
  }
  // Watch before the first registration so that a kubelet restart during it is not missed.
  impl_->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  impl_->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  impl_->AddWatch();
  impl_->started = true;
  uint64_t health_seen = impl_->node.health != nullptr ? impl_->node.health->generation() : 0;
  {
    std::lock_guard<std::mutex> lock(impl_->run_mu);
    impl_->up.assign(servers->size(), false);
    for (size_t i = 0; i < servers->size(); ++i) impl_->StartOne(i);
  }
  impl_->watcher = std::thread([this] { impl_->Watch(); });
  if (impl_->node.health != nullptr) {
    impl_->health_poller = std::thread([this, health_seen] { impl_->PollHealth(health_seen); });
  }
}

void DevicePluginManager::Stop() {
  std::lock_guard<std::mutex> lifecycle(impl_->lifecycle_mu);
  impl_->StopLocked();
}

void DevicePluginManager::NotifyHealthChanged() {
  for (const auto& server : *impl_->Snapshot()) server->NotifyHealthChanged();
}

int DevicePluginManager::registrations() const { return impl_->registrations.load(); }

}  // namespace accel::kube
