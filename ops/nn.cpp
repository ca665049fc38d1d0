#include "ops/cpu_util.h"
