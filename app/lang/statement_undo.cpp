#include "app/lang/statement_undo.h"

#include <algorithm>

#include "core/workspace.h"

namespace opscope::lang {

void StatementUndo::begin(Workspace& ws, int first_new_node) {
  end();
  ws_ = &ws;
  first_new_node_ = first_new_node;
  active_ = true;
}

void StatementUndo::end() {
  active_ = false;
  vars_.clear();
  entries_.clear();
  index_.clear();
  compact_at_ = 256;
}

void StatementUndo::before_assign(const std::string& name, const std::map<std::string, Value>& globals) {
  if (!active_ || vars_.count(name)) return;
  auto it = globals.find(name);
  vars_.emplace(name, it == globals.end() ? std::nullopt : std::optional<Value>(it->second));
  peak_ = std::max(peak_, entries());
}

bool StatementUndo::add(Entry e) {
  if (!active_) return false;
  if (e.object) {
    const Key k{e.object, e.field};
    if (auto it = index_.find(k); it != index_.end()) {
      Entry& old = entries_[it->second];
      if (!old.owned || !old.owner.expired()) return false;  // the first change is kept already
      old = std::move(e);  // the object that had this address is gone: this is another one
      return true;
    }
    index_.emplace(k, entries_.size());
  }
  entries_.push_back(std::move(e));
  if (entries_.size() >= compact_at_) compact();
  peak_ = std::max(peak_, entries());
  return true;
}

void StatementUndo::compact() {
  std::vector<Entry> kept;
  kept.reserve(entries_.size());
  for (auto& e : entries_)
    if (!e.owned || !e.owner.expired()) kept.push_back(std::move(e));
  entries_ = std::move(kept);
  index_.clear();
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].object) index_.emplace(Key{entries_[i].object, entries_[i].field}, i);
  compact_at_ = std::max<size_t>(256, entries_.size() * 2);
}

void StatementUndo::on_change(const void* object, int field, std::weak_ptr<void> owner, std::function<void()> undo) {
  add({object, field, true, std::move(owner), std::move(undo)});
}

void StatementUndo::on_change(const void* object, int field, std::function<void()> undo) {
  add({object, field, false, {}, std::move(undo)});
}

bool StatementUndo::keeps(const void* object, int field) const {
  auto it = index_.find(Key{object, field});
  return it != index_.end() && (!entries_[it->second].owned || !entries_[it->second].owner.expired());
}

void StatementUndo::on_change(std::function<void()> undo) { add({nullptr, 0, false, {}, std::move(undo)}); }

bool StatementUndo::keep_grad(const std::shared_ptr<TensorImpl>& leaf) {
  std::weak_ptr<TensorImpl> weak = leaf;
  std::shared_ptr<TensorImpl> before = leaf->grad;
  const bool had = before != nullptr;
  const bool added = add({leaf.get(), grad, true, leaf, [weak, before] {
                            if (auto l = weak.lock()) l->grad = before;
                          }});
  return added && had;
}

void StatementUndo::keep_data(const Tensor& t) {
  if (before_data_change && t.defined() && !t.is_symbolic()) before_data_change(t);
  if (!active_ || !t.defined() || t.is_symbolic()) return;
  if (keeps(t.impl(), data)) return;
  std::weak_ptr<TensorImpl> weak = t.impl_ptr();
  Tensor before = t.clone(MemCategory::temporary);
  add({t.impl(), data, true, t.impl_ptr(), [weak, before] {
         if (auto l = weak.lock()) Tensor(l).copy_from(before);
       }});
}

void StatementUndo::keep_saved(int node_id, const std::vector<SavedTensor>& saved, bool released_before) {
  if (!active_ || node_id >= first_new_node_) return;  // a node of this statement goes with the rollback
  Workspace* ws = ws_;
  // The node's id stands for it: nodes older than the statement are neither rolled back nor
  // dropped while it runs.
  on_change(reinterpret_cast<const void*>(static_cast<intptr_t>(node_id) + 1), StatementUndo::saved,
            [ws, node_id, saved, released_before] {
              Node* n = ws->graph().find_node(node_id);
              if (!n) return;
              for (auto& s : n->saved)  // whatever is left of them now
                if (s.tensor.defined()) s.tensor.storage().drop_saved_ref();
              n->saved = saved;
              for (auto& s : n->saved)
                if (s.tensor.defined()) s.tensor.storage().add_saved_ref();
              n->saved_released = released_before;
            });
}

void StatementUndo::undo(std::map<std::string, Value>& globals) {
  active_ = false;
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
    if (!it->owned || !it->owner.expired()) it->undo();
  for (auto& [name, value] : vars_) {
    if (value) globals[name] = *value;
    else globals.erase(name);
  }
  end();
}

}  // namespace opscope::lang
