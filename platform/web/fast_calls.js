// Cheaper calls between the program and JavaScript (linked with --post-js by cmake/web.cmake: it
// runs in opscope.js's own scope, before the WebAssembly module is instantiated).
//
// Emscripten 3.1.6's C++ exceptions are JavaScript's: a call that may throw, from a function with
// destructors to run, leaves WebAssembly for a JavaScript `invoke_SIG` that calls the target
// inside try/catch. That trampoline calls two of the module's exports (stackSave, then
// dynCall_SIG, which makes the indirect call), and Asyncify wraps every export in a JavaScript
// function that records it on a stack (Asyncify.exportCallStack) with try/finally and
// Function.apply. Profiled in Chromium, those wrappers and the extra entries were a third of a
// tiny op's time. Both are needed only where JavaScript enters the program from outside it:
// - An export's wrapper records which export is at the bottom of the stack (the one a suspended
//   stack is rewound from) and stops an unwind once the outermost export returns. Called while
//   another export is running (the stack is not empty), it does neither: it is skipped then.
// - dynCall_SIG is there so that a function pointer called from outside the program (a fiber's
//   first entry, a browser callback) enters through a wrapped export. An invoke_SIG always runs
//   inside an export, so it calls the table's function directly; an unwind through it returns
//   to the caller, which Asyncify instruments as it does any call to invoke_*, and a rewind calls
//   invoke_SIG again with the same arguments. Signatures with i64 (passed as two i32 to
//   JavaScript) keep Emscripten's invoke_SIG and its dynCall_SIG.
(function () {
  'use strict';

  // The export called directly when another one is running, through Emscripten's wrapper when not.
  function nestedDirect(raw, wrapped) {
    var stack = Asyncify.exportCallStack;
    switch (raw.length) {
      case 0: return function nestedExport0() { return stack.length ? raw() : wrapped(); };
      case 1: return function nestedExport1(a) { return stack.length ? raw(a) : wrapped(a); };
      case 2: return function nestedExport2(a, b) { return stack.length ? raw(a, b) : wrapped(a, b); };
      case 3: return function nestedExport3(a, b, c) { return stack.length ? raw(a, b, c) : wrapped(a, b, c); };
      case 4: return function nestedExport4(a, b, c, d) { return stack.length ? raw(a, b, c, d) : wrapped(a, b, c, d); };
      default: return function nestedExportN() { return stack.length ? raw.apply(null, arguments) : wrapped.apply(null, arguments); };
    }
  }

  var instrumentExports = Asyncify.instrumentWasmExports;
  Asyncify.instrumentWasmExports = function (exports) {
    var wrapped = instrumentExports(exports), ret = {};
    for (var name in wrapped) {
      var raw = exports[name];
      ret[name] = typeof raw == 'function' ? nestedDirect(raw, wrapped[name]) : wrapped[name];
    }
    return ret;
  };

  // The table's functions as JavaScript sees them, fetched once each (the table does not change
  // after instantiation: nothing here calls addFunction).
  var tableMirror = [];
  function tableEntry(index) {
    var f = tableMirror[index];
    if (f === undefined) tableMirror[index] = f = wasmTable.get(index);
    return f;
  }

  // An exception's landing: as Emscripten's invoke_SIG does it.
  function landed(e, sp) {
    stackRestore(sp);
    if (e !== e + 0) throw e;
    _setThrew(1, 0);
  }

  function directInvoke(arity) {
    switch (arity) {
      case 0: return function directInvoke0(i) { var sp = stackSave(); try { return tableEntry(i)(); } catch (err) { landed(err, sp); } };
      case 1: return function directInvoke1(i, a) { var sp = stackSave(); try { return tableEntry(i)(a); } catch (err) { landed(err, sp); } };
      case 2: return function directInvoke2(i, a, b) { var sp = stackSave(); try { return tableEntry(i)(a, b); } catch (err) { landed(err, sp); } };
      case 3: return function directInvoke3(i, a, b, c) { var sp = stackSave(); try { return tableEntry(i)(a, b, c); } catch (err) { landed(err, sp); } };
      case 4: return function directInvoke4(i, a, b, c, d) { var sp = stackSave(); try { return tableEntry(i)(a, b, c, d); } catch (err) { landed(err, sp); } };
      case 5: return function directInvoke5(i, a, b, c, d, e) { var sp = stackSave(); try { return tableEntry(i)(a, b, c, d, e); } catch (err) { landed(err, sp); } };
      case 6: return function directInvoke6(i, a, b, c, d, e, f) { var sp = stackSave(); try { return tableEntry(i)(a, b, c, d, e, f); } catch (err) { landed(err, sp); } };
      case 7: return function directInvoke7(i, a, b, c, d, e, f, g) { var sp = stackSave(); try { return tableEntry(i)(a, b, c, d, e, f, g); } catch (err) { landed(err, sp); } };
      case 8: return function directInvoke8(i, a, b, c, d, e, f, g, h) { var sp = stackSave(); try { return tableEntry(i)(a, b, c, d, e, f, g, h); } catch (err) { landed(err, sp); } };
      case 9: return function directInvoke9(i, a, b, c, d, e, f, g, h, j) { var sp = stackSave(); try { return tableEntry(i)(a, b, c, d, e, f, g, h, j); } catch (err) { landed(err, sp); } };
      default: return function directInvokeN(i) {
        var sp = stackSave();
        try { return tableEntry(i).apply(null, Array.prototype.slice.call(arguments, 1)); } catch (err) { landed(err, sp); }
      };
    }
  }

  // The imports are named by minified keys; Emscripten's trampolines keep their names.
  for (var key in asmLibraryArg) {
    var f = asmLibraryArg[key], m = typeof f == 'function' && /^invoke_([vijfd]+)$/.exec(f.name);
    if (m && m[1].indexOf('j') < 0) asmLibraryArg[key] = directInvoke(m[1].length - 1);
  }
})();
