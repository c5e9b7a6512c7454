// The key-value store behind rendezvous and failure diagnosis (internal): Gloo's FileStore
// or RedisStore, made thread-safe and able to overwrite (the per-rank status keys change
// every heartbeat; Gloo's stores only set a key once).
#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

namespace ember::distributed {

class Store {
 public:
  virtual ~Store() = default;
  // Sets or replaces `key`.
  virtual void set(const std::string& key, const std::vector<char>& value) = 0;
  // The value of `key`, or nothing when it is not set; never waits.
  virtual std::optional<std::vector<char>> try_get(const std::string& key) = 0;
  // A description for messages ("file:/tmp/x", "redis://host:6379/prefix").
  virtual std::string describe() const = 0;

  bool has(const std::string& key) { return try_get(key).has_value(); }
  // Waits until every key is set; throws Error naming the missing keys after `timeout`.
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout, const char* op);
};

// "file:DIR" (created when missing) or "redis://HOST:PORT[/PREFIX]".
std::shared_ptr<Store> open_store(const std::string& url, const char* op);

// Keys of `base` under "PREFIX/".
std::shared_ptr<Store> prefix_store(std::shared_ptr<Store> base, const std::string& prefix);

// Presents a Store to Gloo's rendezvous (connectFullMesh). A key it sets must not exist
// yet: one left by an earlier run would connect this run to stale addresses.
class GlooStore : public gloo::rendezvous::Store {
 public:
  GlooStore(std::shared_ptr<distributed::Store> store, std::chrono::milliseconds timeout)
      : store_(std::move(store)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  std::shared_ptr<distributed::Store> store_;
  std::chrono::milliseconds timeout_;
};

}  // namespace ember::distributed
