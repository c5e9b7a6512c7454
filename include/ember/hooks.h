// Hook lists and the handle that removes a hook (torch.utils.hooks.RemovableHandle), shared
// by module forward hooks and tensor gradient hooks.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace ember {

// Returned by every register_*_hook: remove() takes the hook out of its list. Removing twice,
// or after the list's owner is gone, does nothing.
class RemovableHandle {
 public:
  RemovableHandle() = default;
  explicit RemovableHandle(std::function<void()> remove) : remove_(std::move(remove)) {}

  void remove() {
    if (remove_) std::exchange(remove_, nullptr)();
  }

 private:
  std::function<void()> remove_;
};

// Hooks in registration order. A copy holds copies of the hooks, not the original's list:
// removing through a handle affects only the list that returned it.
template <typename Hook>
class HookList {
 public:
  HookList() : state_(std::make_shared<State>()) {}
  HookList(const HookList& other) : state_(std::make_shared<State>(*other.state_)) {}
  HookList& operator=(const HookList& other) {
    if (this != &other) state_ = std::make_shared<State>(*other.state_);
    return *this;
  }

  RemovableHandle add(Hook hook) {
    const uint64_t id = state_->next_id++;
    state_->hooks.emplace_back(id, std::move(hook));
    return RemovableHandle([weak = std::weak_ptr<State>(state_), id] {
      if (auto state = weak.lock()) std::erase_if(state->hooks, [id](const auto& entry) { return entry.first == id; });
    });
  }

  bool empty() const { return state_->hooks.empty(); }

  // Calls every hook with `args`; a hook may remove itself or others (the calls go to the
  // hooks present when run began).
  template <typename... Args>
  void run(Args&&... args) const {
    const auto hooks = state_->hooks;
    for (const auto& entry : hooks) entry.second(args...);
  }

 private:
  struct State {
    uint64_t next_id = 0;
    std::vector<std::pair<uint64_t, Hook>> hooks;
  };
  std::shared_ptr<State> state_;
};

}  // namespace ember
