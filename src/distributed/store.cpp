// Gloo's FileStore and RedisStore behind one thread-safe Store that can overwrite keys.
#include "distributed/store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/redis_store.h>

#include "ember/error.h"

namespace ember::distributed {
namespace {

// Gloo's FileStore keeps one file per key (named by a hash of the key) and refuses to set
// a key twice; this adds overwriting and a non-blocking read on the same files.
class FileStore final : public Store {
 public:
  FileStore(const std::string& dir, const char* op) : dir_(dir), files_(make(dir, op)) {}

  void set(const std::string& key, const std::vector<char>& value) override { files_->overwrite(key, value); }
  std::optional<std::vector<char>> try_get(const std::string& key) override { return files_->try_read(key); }
  std::string describe() const override { return "file:" + dir_; }

 private:
  struct Files : gloo::rendezvous::FileStore {
    using gloo::rendezvous::FileStore::FileStore;

    // Written to a temporary file named per thread, then renamed: readers never see a
    // partial value and two threads writing the same key do not share a temporary.
    void overwrite(const std::string& key, const std::vector<char>& value) {
      const std::string tmp = tmpPath(key) + "." + std::to_string(::getpid()) + "." +
                              std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()));
      {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out.write(value.data(), static_cast<std::streamsize>(value.size()));
        EMBER_CHECK(out.good(), "store", "cannot write ", tmp, ": ", std::strerror(errno));
      }
      EMBER_CHECK(std::rename(tmp.c_str(), objectPath(key).c_str()) == 0, "store", "cannot rename ", tmp, ": ",
                  std::strerror(errno));
    }

    std::optional<std::vector<char>> try_read(const std::string& key) {
      std::ifstream in(objectPath(key), std::ios::binary);
      if (!in) return std::nullopt;
      return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  };

  static std::unique_ptr<Files> make(const std::string& dir, const char* op) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    EMBER_CHECK(!error && std::filesystem::is_directory(dir), op, "cannot create the rendezvous directory '", dir,
                "': ", error.message());
    return std::make_unique<Files>(dir);
  }

  std::string dir_;
  std::unique_ptr<Files> files_;
};

// Gloo's RedisStore sets keys with SETNX; this adds SET and a non-blocking GET on its
// connection. A hiredis connection is not thread-safe, hence the mutex.
class RedisStore final : public Store {
 public:
  RedisStore(const std::string& host, int port, const char* op) : host_(host), port_(port), redis_(connect(op)) {}

  void set(const std::string& key, const std::vector<char>& value) override {
    std::lock_guard<std::mutex> lock(mutex_);
    redis_->command_or_throw("SET", key, &value);
  }

  std::optional<std::vector<char>> try_get(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return redis_->command_or_throw("GET", key, nullptr);
  }

  std::string describe() const override { return "redis://" + host_ + ":" + std::to_string(port_); }

 private:
  struct Connection : gloo::rendezvous::RedisStore {
    using gloo::rendezvous::RedisStore::RedisStore;

    // Runs "SET key value" or "GET key"; returns the string reply (none for nil).
    std::optional<std::vector<char>> command_or_throw(const char* verb, const std::string& key,
                                                      const std::vector<char>* value) {
      void* raw = value ? redisCommand(redis_, "SET %b %b", key.data(), key.size(), value->data(), value->size())
                        : redisCommand(redis_, "GET %b", key.data(), key.size());
      EMBER_CHECK(raw != nullptr, "store", "redis ", verb, " '", key, "' failed: ", redis_->errstr);
      std::unique_ptr<redisReply, void (*)(void*)> reply(static_cast<redisReply*>(raw), freeReplyObject);
      EMBER_CHECK(reply->type != REDIS_REPLY_ERROR, "store", "redis ", verb, " '", key, "' failed: ", reply->str);
      if (reply->type != REDIS_REPLY_STRING) return std::nullopt;
      return std::vector<char>(reply->str, reply->str + reply->len);
    }
  };

  std::unique_ptr<Connection> connect(const char* op) {
    try {
      return std::make_unique<Connection>(host_, port_);
    } catch (const std::exception& e) {
      EMBER_FAIL(op, "cannot connect to the redis rendezvous at ", host_, ":", port_, ": ", e.what());
    }
  }

  std::string host_;
  int port_;
  std::mutex mutex_;
  std::unique_ptr<Connection> redis_;
};

class PrefixStore final : public Store {
 public:
  PrefixStore(std::shared_ptr<Store> base, std::string prefix) : base_(std::move(base)), prefix_(std::move(prefix)) {}

  void set(const std::string& key, const std::vector<char>& value) override { base_->set(prefix_ + key, value); }
  std::optional<std::vector<char>> try_get(const std::string& key) override { return base_->try_get(prefix_ + key); }
  std::string describe() const override { return base_->describe() + " (keys " + prefix_ + "*)"; }

 private:
  std::shared_ptr<Store> base_;
  std::string prefix_;
};

}  // namespace

void Store::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout, const char* op) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::vector<std::string> missing;
    for (const auto& key : keys)
      if (!has(key)) missing.push_back(key);
    if (missing.empty()) return;
    EMBER_CHECK(std::chrono::steady_clock::now() < deadline, op, "timed out after ", timeout.count(),
                " ms waiting for keys ", missing, " in ", describe());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::shared_ptr<Store> open_store(const std::string& url, const char* op) {
  if (url.rfind("file:", 0) == 0) {
    const std::string dir = url.substr(5);
    EMBER_CHECK(!dir.empty(), op, "rendezvous '", url, "' names no directory");
    return std::make_shared<FileStore>(dir, op);
  }
  const std::string scheme = "redis://";
  EMBER_CHECK(url.rfind(scheme, 0) == 0, op, "rendezvous '", url,
              "' is neither file:DIR nor redis://HOST:PORT[/PREFIX]");
  std::string rest = url.substr(scheme.size());
  std::string prefix;
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    prefix = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  const auto colon = rest.rfind(':');
  EMBER_CHECK(colon != std::string::npos && colon > 0, op, "rendezvous '", url, "' needs HOST:PORT");
  const std::string port_text = rest.substr(colon + 1);
  int port = 0;
  const auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc() || end != port_text.data() + port_text.size()) port = 0;
  EMBER_CHECK(port > 0 && port < 65536, op, "rendezvous '", url, "' has an invalid port");
  std::shared_ptr<Store> store = std::make_shared<RedisStore>(rest.substr(0, colon), port, op);
  return prefix.empty() ? store : prefix_store(store, prefix);
}

std::shared_ptr<Store> prefix_store(std::shared_ptr<Store> base, const std::string& prefix) {
  return std::make_shared<PrefixStore>(std::move(base), prefix + "/");
}

void GlooStore::set(const std::string& key, const std::vector<char>& data) {
  EMBER_CHECK(!store_->has(key), "init_process_group", "rendezvous key '", key, "' already exists in ",
              store_->describe(), ": an earlier run used this rendezvous; give each run a fresh one");
  store_->set(key, data);
}

std::vector<char> GlooStore::get(const std::string& key) {
  wait({key});
  return *store_->try_get(key);
}

void GlooStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  store_->wait(keys, timeout.count() > 0 ? timeout : timeout_, "init_process_group");
}

}  // namespace ember::distributed
