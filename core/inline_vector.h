// InlineVector<T, N>: a vector of a trivially copyable T that keeps up to N items in place and
// goes to the heap only beyond them, with the subset of std::vector's interface the code base
// uses and conversions to and from std::vector<T>. The engine's small per-op lists are these:
// shapes and strides (Dims), a node's input and output ids and its frames. With std::vector a
// one-element tensor's op cost a dozen allocations; a chain of tiny ops spent a fifth of its
// time there.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace opscope {

template <class T, size_t N> class InlineVector {
  static_assert(std::is_trivially_copyable_v<T>, "InlineVector copies its items as bytes");

 public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;
  static constexpr size_t kInline = N;

  InlineVector() = default;
  explicit InlineVector(size_t n, T value = T()) { assign(n, value); }
  InlineVector(std::initializer_list<T> l) { assign(l.begin(), l.end()); }
  template <class It, class = typename std::iterator_traits<It>::iterator_category> InlineVector(It first, It last) {
    assign(first, last);
  }
  InlineVector(const std::vector<T>& v) { assign(v.begin(), v.end()); }  // NOLINT: implicit on purpose
  InlineVector(const InlineVector& o) { copy_from(o); }
  InlineVector(InlineVector&& o) noexcept { take(o); }
  InlineVector& operator=(const InlineVector& o) {
    if (this != &o) copy_from(o);
    return *this;
  }
  InlineVector& operator=(InlineVector&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  InlineVector& operator=(std::initializer_list<T> l) {
    assign(l.begin(), l.end());
    return *this;
  }
  ~InlineVector() { release(); }
  // Implicit for shapes (attributes hold them as std::vector<int64_t>); explicit for the rest,
  // so that a hot loop cannot copy a node's ids into a vector without saying so.
  explicit(!std::is_same_v<T, int64_t>) operator std::vector<T>() const {
    return std::vector<T>(begin(), end());
  }  // NOLINT

  template <class It, class = typename std::iterator_traits<It>::iterator_category> void assign(It first, It last) {
    const auto n = static_cast<size_t>(std::distance(first, last));
    clear();
    reserve(n);
    std::copy(first, last, data_);
    size_ = n;
  }
  void assign(size_t n, T value) {
    clear();
    reserve(n);
    std::fill(data_, data_ + n, value);
    size_ = n;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  iterator begin() { return data_; }
  iterator end() { return data_ + size_; }
  const_iterator begin() const { return data_; }
  const_iterator end() const { return data_ + size_; }
  const_iterator cbegin() const { return data_; }
  const_iterator cend() const { return data_ + size_; }
  reverse_iterator rbegin() { return reverse_iterator(end()); }
  reverse_iterator rend() { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& at(size_t i) {
    if (i >= size_) throw std::out_of_range("InlineVector::at");
    return data_[i];
  }
  const T& at(size_t i) const { return const_cast<InlineVector*>(this)->at(i); }
  T& front() { return data_[0]; }
  const T& front() const { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  void reserve(size_t n) {
    if (n <= capacity_) return;
    const size_t cap = std::max(n, 2 * capacity_);
    auto* fresh = new T[cap];
    std::copy(data_, data_ + size_, fresh);
    release();
    data_ = fresh;
    capacity_ = cap;
  }
  void clear() { size_ = 0; }
  void resize(size_t n, T value = T()) {
    reserve(n);
    if (n > size_) std::fill(data_ + size_, data_ + n, value);
    size_ = n;
  }
  void push_back(T v) {
    if (size_ == capacity_) reserve(size_ + 1);
    data_[size_++] = v;
  }
  T& emplace_back(T v) {
    push_back(v);
    return back();
  }
  void pop_back() { --size_; }
  iterator insert(const_iterator pos, T v) { return insert(pos, size_t{1}, v); }
  iterator insert(const_iterator pos, size_t n, T v) {
    const size_t at = static_cast<size_t>(pos - data_);
    open_gap(at, n);
    std::fill(data_ + at, data_ + at + n, v);
    return data_ + at;
  }
  template <class It, class = typename std::iterator_traits<It>::iterator_category>
  iterator insert(const_iterator pos, It first, It last) {
    const size_t at = static_cast<size_t>(pos - data_);
    const std::vector<T> items(first, last);  // the range may be inside this one
    open_gap(at, items.size());
    std::copy(items.begin(), items.end(), data_ + at);
    return data_ + at;
  }
  iterator insert(const_iterator pos, std::initializer_list<T> l) { return insert(pos, l.begin(), l.end()); }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    const size_t a = static_cast<size_t>(first - data_), b = static_cast<size_t>(last - data_);
    std::copy(data_ + b, data_ + size_, data_ + a);
    size_ -= b - a;
    return data_ + a;
  }
  void swap(InlineVector& o) noexcept {
    InlineVector t(std::move(o));
    o = std::move(*this);
    *this = std::move(t);
  }

  friend bool operator==(const InlineVector& a, const InlineVector& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const InlineVector& a, const InlineVector& b) { return !(a == b); }
  friend bool operator<(const InlineVector& a, const InlineVector& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator>(const InlineVector& a, const InlineVector& b) { return b < a; }
  friend bool operator<=(const InlineVector& a, const InlineVector& b) { return !(b < a); }
  friend bool operator>=(const InlineVector& a, const InlineVector& b) { return !(a < b); }

 private:
  bool on_heap() const { return data_ != inline_; }
  void release() {
    if (on_heap()) delete[] data_;
    data_ = inline_;
    capacity_ = kInline;
  }
  // A short one is copied as the whole inline buffer: a fixed-size copy is a few vector moves,
  // where a copy of `size_` elements is a call to memmove.
  void copy_from(const InlineVector& o) {
    if (o.size_ <= kInline && !on_heap()) {
      std::memcpy(inline_, o.data_, sizeof inline_);
      size_ = o.size_;
    } else {
      assign(o.begin(), o.end());
    }
  }
  void take(InlineVector& o) {  // this is empty and inline
    if (o.on_heap()) {
      data_ = o.data_;
      capacity_ = o.capacity_;
      o.data_ = o.inline_;
      o.capacity_ = kInline;
    } else {
      std::memcpy(inline_, o.inline_, sizeof inline_);
    }
    size_ = o.size_;
    o.size_ = 0;
  }
  void open_gap(size_t at, size_t n) {
    reserve(size_ + n);
    std::copy_backward(data_ + at, data_ + size_, data_ + size_ + n);
    size_ += n;
  }

  T inline_[kInline];
  T* data_ = inline_;
  size_t size_ = 0;
  size_t capacity_ = kInline;
};

}  // namespace opscope
