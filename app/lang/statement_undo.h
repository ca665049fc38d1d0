// What one top-level statement changed, kept to put back if it fails or is interrupted:
// each variable's value at the start of the statement, in-place changes (a list item, a
// tensor's requires_grad, a pending stepped pass), and what the engine reports through its
// ChangeJournal (a .grad replaced or accumulated into, data written in place, saved tensors
// freed by a backward pass). First write wins: a loop that changes the same thing 10,000
// times keeps one entry for it, the state before the statement, so memory stays flat.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "app/lang/value.h"
#include "core/journal.h"

namespace opscope {
class Workspace;
}

namespace opscope::lang {

class StatementUndo final : public ChangeJournal {
 public:
  // Starts recording for a statement on `ws`; nodes with ids below `first_new_node` existed
  // before it (their saved tensors are kept if a backward frees them; newer ones go anyway).
  void begin(Workspace& ws, int first_new_node);
  void end();  // the statement finished: forget everything
  bool active() const { return active_; }

  // Before `name` is assigned: remembers its value (or absence) the first time.
  void before_assign(const std::string& name, const std::map<std::string, Value>& globals);
  // Before an in-place change of `object` (`field` tells several changes of one object apart):
  // `undo` puts back the state before the first such change. `owner` is what `object` belongs
  // to: once it is gone the entry is dropped (nothing is left to put back). Later calls for the
  // same object and field in the same statement are ignored.
  void on_change(const void* object, int field, std::weak_ptr<void> owner, std::function<void()> undo);
  void on_change(const void* object, int field, std::function<void()> undo);  // lives as long as the statement
  void on_change(std::function<void()> undo);  // unkeyed: every call is kept
  // True when the first change of `object`'s `field` is already kept (skip making its undo).
  bool keeps(const void* object, int field) const;

  // ChangeJournal: the engine tells us before it changes what the graph's marks do not cover.
  bool keep_grad(const std::shared_ptr<TensorImpl>& leaf) override;
  void keep_data(const Tensor& t) override;
  void keep_saved(int node_id, const std::vector<SavedTensor>& saved, bool released_before) override;

  // Puts everything back, latest change first, and the variables into `globals`; then forgets.
  void undo(std::map<std::string, Value>& globals);

  size_t entries() const { return entries_.size() + vars_.size(); }
  // Asked before an in-place change of a tensor's data (an optimizer's step); it may refuse by
  // throwing (a student's code may not change an exercise's checks' tensors).
  std::function<void(const Tensor&)> before_data_change;
  // The most entries a statement has held at once (a loop's must stay bounded).
  size_t peak_entries() const { return peak_; }

  // Field numbers of the changes the language itself makes.
  enum Field : int {
    grad = 1,
    data,
    saved,
    requires_grad,
    list_items,
    pending_pass,
    static_state,
    checkpoint_mark,
    check_name
  };

 private:
  struct Entry {
    const void* object = nullptr;  // null: unkeyed
    int field = 0;
    bool owned = false;  // `owner` was given: the entry dies with it
    std::weak_ptr<void> owner;
    std::function<void()> undo;
  };
  struct Key {
    const void* object;
    int field;
    bool operator==(const Key& o) const { return object == o.object && field == o.field; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<const void*>()(k.object) * 31 + static_cast<size_t>(k.field);
    }
  };
  // True when a new entry was made (false: the first change of this object is already kept).
  bool add(Entry e);
  void compact();  // drops entries whose owner is gone

  bool active_ = false;
  int first_new_node_ = 0;
  Workspace* ws_ = nullptr;
  std::unordered_map<std::string, std::optional<Value>> vars_;
  std::vector<Entry> entries_;
  std::unordered_map<Key, size_t, KeyHash> index_;
  size_t compact_at_ = 256;
  size_t peak_ = 0;
};

}  // namespace opscope::lang
