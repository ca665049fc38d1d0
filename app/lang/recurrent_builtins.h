// The language's recurrent layers: lstm, gru, rnn (unrolled over time) and their *_weights.
#pragma once
#include "app/lang/call_args.h"

namespace opscope::lang {

void install_recurrent_builtins(BuiltinTable& B);

}  // namespace opscope::lang
