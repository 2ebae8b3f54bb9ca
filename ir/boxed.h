// Boxed<T>: an optional value kept on the heap. Instruction attributes that only a few opcodes
// use (literals, window and dimension numbers) are boxed so every instruction is a pointer wide
// for them instead of their full size: instructions are created and copied at a high rate by the
// passes, and their size was dominated by these rarely-set fields. The interface is
// std::optional's, with deep copies.
#pragma once

#include <cassert>
#include <memory>
#include <optional>
#include <utility>

namespace mltune::ir {

template <typename T>
class Boxed {
 public:
  Boxed() = default;
  Boxed(std::nullopt_t) {}  // NOLINT: implicit, as std::optional's
  Boxed(T value) : ptr_(std::make_unique<T>(std::move(value))) {}  // NOLINT
  Boxed(const Boxed& other) : ptr_(other.ptr_ ? std::make_unique<T>(*other.ptr_) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& other) {
    if (this != &other) ptr_ = other.ptr_ ? std::make_unique<T>(*other.ptr_) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  Boxed& operator=(std::nullopt_t) {
    ptr_.reset();
    return *this;
  }
  Boxed& operator=(T value) {
    if (ptr_) {
      *ptr_ = std::move(value);
    } else {
      ptr_ = std::make_unique<T>(std::move(value));
    }
    return *this;
  }

  template <typename... Args>
  T& emplace(Args&&... args) {
    ptr_ = std::make_unique<T>(std::forward<Args>(args)...);
    return *ptr_;
  }
  void reset() { ptr_.reset(); }

  bool has_value() const { return ptr_ != nullptr; }
  explicit operator bool() const { return ptr_ != nullptr; }
  T& operator*() & {
    assert(ptr_);
    return *ptr_;
  }
  const T& operator*() const& {
    assert(ptr_);
    return *ptr_;
  }
  T&& operator*() && {
    assert(ptr_);
    return std::move(*ptr_);
  }
  T* operator->() { return ptr_.get(); }
  const T* operator->() const { return ptr_.get(); }
  T& value() & { return **this; }
  const T& value() const& { return **this; }
  template <typename U>
  T value_or(U&& fallback) const {
    return ptr_ ? *ptr_ : static_cast<T>(std::forward<U>(fallback));
  }

  friend bool operator==(const Boxed& a, const Boxed& b) {
    if (!a.ptr_ || !b.ptr_) return !a.ptr_ && !b.ptr_;
    return *a.ptr_ == *b.ptr_;
  }

 private:
  std::unique_ptr<T> ptr_;
};

}  // namespace mltune::ir
