// Dims: the type of shapes and strides. A vector of int64 that keeps up to kInline entries in
// place and goes to the heap only beyond them. Every op copies a few shapes (its inputs'
// metadata, its outputs', the graph's record of each value), so with std::vector a one-element
// tensor's op cost about ten allocations; a chain of tiny ops spent a fifth of its time there.
// It converts to and from std::vector<int64_t> (attributes hold shapes as vectors).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <stdexcept>
#include <vector>

namespace opscope {

class Dims {
 public:
  using value_type = int64_t;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = int64_t&;
  using const_reference = const int64_t&;
  using pointer = int64_t*;
  using const_pointer = const int64_t*;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;
  static constexpr size_t kInline = 6;

  Dims() = default;
  explicit Dims(size_t n, int64_t value = 0) { assign(n, value); }
  Dims(std::initializer_list<int64_t> l) { assign(l.begin(), l.end()); }
  template <class It, class = typename std::iterator_traits<It>::iterator_category>
  Dims(It first, It last) {
    assign(first, last);
  }
  Dims(const std::vector<int64_t>& v) { assign(v.begin(), v.end()); }  // NOLINT: implicit on purpose
  Dims(const Dims& o) { copy_from(o); }
  Dims(Dims&& o) noexcept { take(o); }
  Dims& operator=(const Dims& o) {
    if (this != &o) copy_from(o);
    return *this;
  }
  Dims& operator=(Dims&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  Dims& operator=(std::initializer_list<int64_t> l) {
    assign(l.begin(), l.end());
    return *this;
  }
  ~Dims() { release(); }
  operator std::vector<int64_t>() const { return std::vector<int64_t>(begin(), end()); }  // NOLINT

  template <class It, class = typename std::iterator_traits<It>::iterator_category>
  void assign(It first, It last) {
    const auto n = static_cast<size_t>(std::distance(first, last));
    clear();
    reserve(n);
    std::copy(first, last, data_);
    size_ = n;
  }
  void assign(size_t n, int64_t value) {
    clear();
    reserve(n);
    std::fill(data_, data_ + n, value);
    size_ = n;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  int64_t* data() { return data_; }
  const int64_t* data() const { return data_; }
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
  int64_t& operator[](size_t i) { return data_[i]; }
  const int64_t& operator[](size_t i) const { return data_[i]; }
  int64_t& at(size_t i) {
    if (i >= size_) throw std::out_of_range("Dims::at");
    return data_[i];
  }
  const int64_t& at(size_t i) const { return const_cast<Dims*>(this)->at(i); }
  int64_t& front() { return data_[0]; }
  const int64_t& front() const { return data_[0]; }
  int64_t& back() { return data_[size_ - 1]; }
  const int64_t& back() const { return data_[size_ - 1]; }

  void reserve(size_t n) {
    if (n <= capacity_) return;
    const size_t cap = std::max(n, 2 * capacity_);
    auto* fresh = new int64_t[cap];
    std::copy(data_, data_ + size_, fresh);
    release();
    data_ = fresh;
    capacity_ = cap;
  }
  void clear() { size_ = 0; }
  void resize(size_t n, int64_t value = 0) {
    reserve(n);
    if (n > size_) std::fill(data_ + size_, data_ + n, value);
    size_ = n;
  }
  void push_back(int64_t v) {
    if (size_ == capacity_) reserve(size_ + 1);
    data_[size_++] = v;
  }
  int64_t& emplace_back(int64_t v) {
    push_back(v);
    return back();
  }
  void pop_back() { --size_; }
  iterator insert(const_iterator pos, int64_t v) { return insert(pos, size_t{1}, v); }
  iterator insert(const_iterator pos, size_t n, int64_t v) {
    const size_t at = static_cast<size_t>(pos - data_);
    open_gap(at, n);
    std::fill(data_ + at, data_ + at + n, v);
    return data_ + at;
  }
  template <class It, class = typename std::iterator_traits<It>::iterator_category>
  iterator insert(const_iterator pos, It first, It last) {
    const size_t at = static_cast<size_t>(pos - data_);
    const std::vector<int64_t> items(first, last);  // the range may be inside this one
    open_gap(at, items.size());
    std::copy(items.begin(), items.end(), data_ + at);
    return data_ + at;
  }
  iterator insert(const_iterator pos, std::initializer_list<int64_t> l) { return insert(pos, l.begin(), l.end()); }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    const size_t a = static_cast<size_t>(first - data_), b = static_cast<size_t>(last - data_);
    std::copy(data_ + b, data_ + size_, data_ + a);
    size_ -= b - a;
    return data_ + a;
  }
  void swap(Dims& o) noexcept {
    Dims t(std::move(o));
    o = std::move(*this);
    *this = std::move(t);
  }

  friend bool operator==(const Dims& a, const Dims& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const Dims& a, const Dims& b) { return !(a == b); }
  friend bool operator<(const Dims& a, const Dims& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator>(const Dims& a, const Dims& b) { return b < a; }
  friend bool operator<=(const Dims& a, const Dims& b) { return !(b < a); }
  friend bool operator>=(const Dims& a, const Dims& b) { return !(a < b); }

 private:
  bool on_heap() const { return data_ != inline_; }
  void release() {
    if (on_heap()) delete[] data_;
    data_ = inline_;
    capacity_ = kInline;
  }
  // A short one is copied as the whole inline buffer: a fixed-size copy is a few vector moves,
  // where a copy of `size_` elements is a call to memmove.
  void copy_from(const Dims& o) {
    if (o.size_ <= kInline && !on_heap()) {
      std::memcpy(inline_, o.data_, sizeof inline_);
      size_ = o.size_;
    } else {
      assign(o.begin(), o.end());
    }
  }
  void take(Dims& o) {  // this is empty and inline
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

  int64_t inline_[kInline];
  int64_t* data_ = inline_;
  size_t size_ = 0;
  size_t capacity_ = kInline;
};

}  // namespace opscope
