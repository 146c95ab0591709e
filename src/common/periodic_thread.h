// PeriodicThread: runs a task on its own thread every interval until stopped — the agent's label
// writer, its fleet publisher, the fleet service's refresher. Stop wakes the thread at once (no
// waiting out the interval) and joins it.
//
// Thread-safe Start/Stop; Stop is idempotent; the destructor stops. The task runs only on the
// thread (never concurrently with itself) and must not call Stop.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace accel {

class PeriodicThread {
 public:
  PeriodicThread() = default;
  ~PeriodicThread() { Stop(); }
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

  /// Runs `task` every `interval` (first after one interval) until Stop. No-op when running.
  void Start(std::chrono::milliseconds interval, std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mu_);
    if (thread_.joinable()) return;
    stopping_ = false;
    thread_ = std::thread([this, interval, task = std::move(task)] {
      std::unique_lock<std::mutex> lock(mu_);
      while (!cv_.wait_for(lock, interval, [this] { return stopping_; })) {
        lock.unlock();
        task();
        lock.lock();
      }
    });
  }

  /// Wakes the thread, waits for a running task to finish, joins.
  void Stop() {
    std::thread done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      done = std::move(thread_);
    }
    cv_.notify_all();
    if (done.joinable()) done.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  ///< guarded by mu_
  std::thread thread_;     ///< guarded by mu_
};

}  // namespace accel
