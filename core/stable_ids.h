// A vector whose items keep the id they were given when pushed, even after others are removed:
// the graph's nodes and values (ids are what tensors, layouts, step events and marks refer to).
// Items stay in id order; the ids pushed since the last removal form a dense tail found by
// arithmetic, older ones by binary search over the ids alone (no item is touched).
#pragma once
#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace opscope {

template <class T> class StableIdVector {
 public:
  int push(T&& item) {
    items_.push_back(std::move(item));
    ids_.push_back(next_);
    return next_++;
  }
  T* find(int id) { return const_cast<T*>(std::as_const(*this).find(id)); }
  const T* find(int id) const {
    if (id >= dense_id_ && id < next_) return &items_[dense_pos_ + static_cast<size_t>(id - dense_id_)];
    if (id < 0 || id >= dense_id_) return nullptr;
    const auto end = ids_.begin() + static_cast<std::ptrdiff_t>(dense_pos_);
    const auto it = std::lower_bound(ids_.begin(), end, id);
    return it == end || *it != id ? nullptr : &items_[static_cast<size_t>(it - ids_.begin())];
  }
  // The position of `id` in items() (and ids()), or -1 when it is not held.
  std::ptrdiff_t index_of(int id) const {
    const T* item = find(id);
    return item ? item - items_.data() : -1;
  }
  // The position of the first item whose id is >= `id` (items().size() if none).
  size_t lower_index(int id) const {
    if (id >= dense_id_) return dense_pos_ + static_cast<size_t>(std::min(id, next_) - dense_id_);
    return static_cast<size_t>(std::lower_bound(ids_.begin(), ids_.end(), id) - ids_.begin());
  }
  int end_id() const { return next_; }  // one past the largest id ever pushed (since a truncate)
  size_t size() const { return items_.size(); }
  const std::vector<T>& items() const { return items_; }
  std::vector<T>& items() { return items_; }
  const std::vector<int>& ids() const { return ids_; }

  // Removes every item with id >= `end`; the next push gets `end` (a rollback reuses the ids).
  void truncate(int end) {
    if (end >= next_) return;
    const size_t p = static_cast<size_t>(std::lower_bound(ids_.begin(), ids_.end(), end) - ids_.begin());
    items_.resize(p);
    ids_.resize(p);
    next_ = end;
    if (p < dense_pos_) dense_pos_ = p;
    dense_id_ = next_ - static_cast<int>(items_.size() - dense_pos_);
  }
  // Keeps the items for which keep(id, item) is true, in order; ids never change.
  template <class Keep> size_t retain_if(Keep&& keep) {
    size_t w = 0;
    for (size_t r = 0; r < items_.size(); ++r)
      if (keep(ids_[r], items_[r])) {
        if (w != r) {
          items_[w] = std::move(items_[r]);
          ids_[w] = ids_[r];
        }
        ++w;
      }
    const size_t removed = items_.size() - w;
    items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(w), items_.end());
    ids_.resize(w);
    // The longest tail that is still dense (ending at next_ - 1).
    dense_pos_ = ids_.size();
    while (dense_pos_ > 0 && ids_[dense_pos_ - 1] == next_ - static_cast<int>(ids_.size() - dense_pos_) - 1)
      --dense_pos_;
    dense_id_ = next_ - static_cast<int>(ids_.size() - dense_pos_);
    // A long tape gives its memory back; a loop's steady tape (drops of a few thousand) keeps its
    // capacity, or each drop would be followed by regrowing it and moving every item again.
    if (items_.capacity() > 8192 && items_.capacity() > 8 * items_.size()) {
      items_.shrink_to_fit();
      ids_.shrink_to_fit();
    }
    return removed;
  }
  void clear() {
    items_.clear();
    ids_.clear();
    next_ = dense_id_ = 0;
    dense_pos_ = 0;
  }

 private:
  std::vector<T> items_;
  std::vector<int> ids_;  // ascending
  int next_ = 0;
  // items_[dense_pos_ + k] has id dense_id_ + k for every k (the tail pushed since a removal).
  int dense_id_ = 0;
  size_t dense_pos_ = 0;
};

}  // namespace opscope
