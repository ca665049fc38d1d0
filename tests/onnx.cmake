# ONNX tests that run the opscope command: the backend conformance suite when libonnx-testdata
# is installed, import of the shipped models, and export checked by python3-onnx when present.
if(NOT OPSCOPE_HAVE_ONNX)
  add_test(NAME onnx_unavailable COMMAND sh -c "$<TARGET_FILE:opscope> import ${CMAKE_CURRENT_SOURCE_DIR}/assets/models/encoder.onnx 2>&1")
  set_tests_properties(onnx_unavailable PROPERTIES PASS_REGULAR_EXPRESSION "built without ONNX")
else()
  set(ONNX_TESTDATA /usr/share/libonnx-testdata/data)
  if(EXISTS ${ONNX_TESTDATA}/node)
    # Every node test of a mapped op type passes or is skipped with its reason (~0.2 s).
    add_test(NAME onnx_conformance COMMAND opscope onnx-test ${ONNX_TESTDATA}/node ${ONNX_TESTDATA}/pytorch-converted
             ${ONNX_TESTDATA}/pytorch-operator ${ONNX_TESTDATA}/simple)
    set_tests_properties(onnx_conformance PROPERTIES PASS_REGULAR_EXPRESSION " 0 failed")
  else()
    message(STATUS "opscope: libonnx-testdata not found, the ONNX conformance test is not registered")
  endif()
  add_test(NAME onnx_import_cli COMMAND opscope import ${CMAKE_CURRENT_SOURCE_DIR}/assets/models/encoder.onnx --shape x=2,6,32)
  set_tests_properties(onnx_import_cli PROPERTIES PASS_REGULAR_EXPRESSION "/layer/self_attn/Softmax\\[8, 6, 6\\] = softmax")
  # Several models in one call, each traced in a workspace of its own (the second graph starts at #0).
  add_test(NAME onnx_import_cli_two COMMAND opscope import ${CMAKE_CURRENT_SOURCE_DIR}/assets/models/resnet_block.onnx
           ${CMAKE_CURRENT_SOURCE_DIR}/assets/models/fashion_cnn.onnx)
  set_tests_properties(onnx_import_cli_two PROPERTIES PASS_REGULAR_EXPRESSION "resnet_block.onnx: ONNX IR.*#8 fwd /Relu_1.*fashion_cnn.onnx: ONNX IR.*#0 fwd /conv1/Conv\\[1, 8, 28, 28\\]")
  # The protobuf module's absence is explained (cli_lazy_modules: it is opened on first use).
  add_test(NAME onnx_module_missing COMMAND sh -c "OPSCOPE_ONNX_MODULE=/nonexistent/libopscope_onnx_proto.so $<TARGET_FILE:opscope> import ${CMAKE_CURRENT_SOURCE_DIR}/assets/models/encoder.onnx 2>&1")
  set_tests_properties(onnx_module_missing PROPERTIES PASS_REGULAR_EXPRESSION "ONNX is not available: libopscope_onnx_proto.so not found.*hint: rebuild opscope")
  # Export from the command line; then ONNX's own Python checker (full_check: with shape
  # inference) on what was written, when Debian's python3-onnx is there (about a second).
  add_test(NAME onnx_export_cli COMMAND opscope export ${CMAKE_CURRENT_SOURCE_DIR}/tests/onnx/export_mlp.ops
           --onnx ${CMAKE_CURRENT_BINARY_DIR}/export_mlp.onnx)
  set_tests_properties(onnx_export_cli PROPERTIES PASS_REGULAR_EXPRESSION "wrote .*export_mlp.onnx: [0-9]+ ONNX nodes, 4 initializers, 1 inputs, opset 17")
  # (onnx.checker, not onnx: libonnx-testdata leaves a bare dist-packages/onnx folder that imports as an empty namespace)
  execute_process(COMMAND /usr/bin/python3 -c "import onnx.checker" RESULT_VARIABLE PYTHON_ONNX_MISSING OUTPUT_QUIET ERROR_QUIET)
  if(PYTHON_ONNX_MISSING EQUAL 0)
    add_test(NAME onnx_export_python_checker COMMAND /usr/bin/python3 -c
             "import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True); print('checked')"
             ${CMAKE_CURRENT_BINARY_DIR}/export_mlp.onnx)
    set_tests_properties(onnx_export_python_checker PROPERTIES DEPENDS onnx_export_cli PASS_REGULAR_EXPRESSION "checked")
  else()
    message(STATUS "opscope: /usr/bin/python3 has no onnx module, the Python checker test is not registered")
  endif()
endif()
