// The course's swish as a user-defined operator with its hand-written backward (the @op tests).
#pragma once

namespace opscope::test {

inline const char* kSwishOp = R"ops(@op
def swish(x, beta=1.0):
    """y = x·sigmoid(beta·x)"""
    s = sigmoid(beta * x)
    save(x, s)
    return x * s

@swish.backward
def swish_backward(dy, x, s, beta=1.0):
    return dy * (s + beta * x * s * (1.0 - s))
)ops";

}  // namespace opscope::test
