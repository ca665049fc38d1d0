// The changes a statement's rollback must undo beyond the graph's own marks: a leaf's .grad
// replaced or accumulated into, a tensor's data written in place (an SGD step, batch_norm's
// running statistics), a forward node's saved tensors freed by a backward pass. The engine
// tells the workspace's journal (the language's statement undo log) before each such change.
#pragma once
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace opscope {

struct SavedTensor;

class ChangeJournal {
 public:
  virtual ~ChangeJournal() = default;
  // Before `leaf`'s .grad is set, cleared or accumulated into. True when the journal now keeps
  // the current .grad tensor to put back: the caller then must not write into it (it
  // accumulates into a new tensor instead).
  virtual bool keep_grad(const std::shared_ptr<TensorImpl>& leaf) = 0;
  // Before `t`'s data is overwritten in place.
  virtual void keep_data(const Tensor& t) = 0;
  // Before a backward pass frees node `node_id`'s saved tensors (and marks them freed);
  // `released_before` is the node's flag before. The journal keeps what a rollback needs.
  virtual void keep_saved(int node_id, const std::vector<SavedTensor>& saved, bool released_before) = 0;
};

}  // namespace opscope
