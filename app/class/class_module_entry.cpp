// The symbol `opscope class` opens libopscope_class.so for: its table (class_module.h).
#include "app/class/class_module.h"
#include "app/class/server.h"
#include "opscope_abi.h"

extern "C" const opscope::classroom::ClassModule* opscope_class_module() {
  static const opscope::classroom::ClassModule table{{opscope::classroom::kClassModuleInterface, OPSCOPE_ABI_ID},
                                                     &opscope::classroom::init_class,
                                                     &opscope::classroom::serve_class};
  return &table;
}
