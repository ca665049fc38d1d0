// The page's side of opscope in the browser (platform/web/platform_web.cpp calls these):
// the command line from the address, downloads, the file chooser and dropped files, saving to
// IndexedDB, the loading screen, and what tests read (window.opscope: exitCode, downloads,
// errors, firstFrameMs).
'use strict';

(function () {
  const HOME = '/home/web_user';
  // Files the user opens: up to 64 MB they are kept across reloads (IndexedDB, like the
  // progress), so the workspace's journal can open them again in the next session; a larger
  // one (a full-size model) is kept for this visit only.
  const KEPT_UPLOADS = HOME + '/.local/share/opscope/uploads', UPLOADS = HOME + '/uploads';
  const KEEP_UPLOAD_BYTES = 64 << 20;
  const loading = document.getElementById('loading');
  const loadingText = document.getElementById('loading-text');
  const loadingBar = document.getElementById('loading-bar');

  const opscope = {
    exitCode: null,       // main()'s code once the program ended (a headless run)
    firstFrameMs: null,   // ms from navigation to the first frame drawn
    downloads: [],        // {name, size} of every file offered
    errors: [],           // uncaught errors and aborts
    picked: [],           // paths of files chosen or dropped, not yet taken by the program
    storageReady: false,  // IndexedDB's folders are mounted and read (platform_web.cpp)
  };
  window.opscope = opscope;

  // [SECTION] The command line, from the address
  // ?argv=["gui","--lesson","5"] (tools/web_run.sh), or the readable forms a teacher links to:
  // ?lesson=5&lang=zh, ?script=assets/examples/transformer_block.ops, ?open=assets/models/encoder.onnx
  opscope.commandLine = function () {
    const q = new URLSearchParams(location.search);
    let args = [];
    if (q.has('argv')) {
      try {
        args = JSON.parse(q.get('argv')).map(String);
      } catch (e) {
        console.error('opscope: ?argv= is not a JSON array of strings:', e.message);
      }
    } else if (q.has('lesson') || q.has('script') || q.has('open')) {
      const shipped = (p) => (p.startsWith('/') ? p : '/opscope/' + p);
      args = ['gui'];
      if (q.has('lesson')) args.push('--lesson', q.get('lesson'));
      if (q.has('lang')) args.push('--lang', q.get('lang'));
      if (q.has('script')) args.push('--script', shipped(q.get('script')));
      if (q.has('open')) args.push('--open', shipped(q.get('open')));
    }
    return JSON.stringify(args);
  };

  // The human-input tests read what the window shows (platform.h: publish_live_state).
  opscope.liveState = null;
  opscope.liveStateWanted = function () { return new URLSearchParams(location.search).has('live_state'); };

  // [SECTION] Persistent storage: IndexedDB behind ~/.config and ~/.local
  // Each tab of the site holds its own copy of these folders in memory (Emscripten's IDBFS) and
  // all share one IndexedDB. Emscripten's FS.syncfs(false) writes a tab's whole copy back, so the
  // tab that wrote last undid every other tab's work; here a tab writes back only the files it
  // changed since it last met IndexedDB, tells the other tabs (BroadcastChannel), and they read
  // those files in, unless they changed them too (the progress file is also merged by the
  // program when it writes it: app/lesson/progress.cpp).
  const storage = { mounts: [], known: {} };  // known: path -> mtime (ms) when last met IndexedDB
  const channel = typeof BroadcastChannel !== 'undefined' ? new BroadcastChannel('opscope-storage') : null;
  const settle = (f) => new Promise((resolve, reject) => f((err, v) => (err ? reject(err) : resolve(v))));
  const times = (set) => Object.fromEntries(Object.entries(set.entries).map(([p, e]) => [p, e.timestamp.getTime()]));
  let storageChain = Promise.resolve();
  function serial(work) {  // one meeting with IndexedDB at a time
    const run = storageChain.then(work).catch((e) => console.warn('opscope: IndexedDB:', e));
    storageChain = run;
    return run;
  }
  function transact(mount, write, each) {
    return settle((cb) => IDBFS.getDB(mount.mountpoint, cb)).then((db) => new Promise((resolve, reject) => {
      const t = db.transaction([IDBFS.DB_STORE_NAME], write ? 'readwrite' : 'readonly');
      const store = t.objectStore(IDBFS.DB_STORE_NAME);
      t.oncomplete = () => resolve();
      t.onerror = (e) => { e.preventDefault(); reject(t.error); };
      each(store, (err) => { if (err) { try { t.abort(); } catch (e) {} reject(err); } });
    }));
  }
  // Writes back what this tab changed (and removes what it removed) since it last met IndexedDB.
  function push() {
    const changedAll = [], removedAll = [];
    return Promise.all(storage.mounts.map((mount) => settle((cb) => IDBFS.getLocalSet(mount, cb)).then((set) => {
      const local = times(set), root = mount.mountpoint + '/';
      const changed = Object.keys(local).filter((p) => storage.known[p] !== local[p]).sort();
      const removed = Object.keys(storage.known).filter((p) => p.startsWith(root) && !(p in local)).sort().reverse();
      if (!changed.length && !removed.length) return;
      const written = {};  // path -> the time of what was written (the program may have written it again since the set was read)
      return transact(mount, true, (store, fail) => {
        for (const p of changed)
          IDBFS.loadLocalEntry(p, (err, entry) => {
            if (err) return fail(err);
            written[p] = entry.timestamp.getTime();
            IDBFS.storeRemoteEntry(store, p, entry, (e) => e && fail(e));
          });
        for (const p of removed) IDBFS.removeRemoteEntry(store, p, (e) => e && fail(e));
      }).then(() => {
        for (const p of changed) storage.known[p] = written[p];
        for (const p of removed) delete storage.known[p];
        changedAll.push(...changed);
        removedAll.push(...removed);
      });
    }))).then(() => {
      if (channel && (changedAll.length || removedAll.length)) channel.postMessage({ changed: changedAll, removed: removedAll });
    });
  }
  // Reads in what other tabs wrote since this tab last met IndexedDB, where this tab did not change it too.
  function pull() {
    return Promise.all(storage.mounts.map((mount) => Promise.all([
      settle((cb) => IDBFS.getLocalSet(mount, cb)), settle((cb) => IDBFS.getRemoteSet(mount, cb))]).then(([l, r]) => {
      const local = times(l), remote = times(r), root = mount.mountpoint + '/', known = storage.known;
      const mine = (p) => local[p] === known[p];  // unchanged here since last met
      const load = Object.keys(remote).filter((p) => remote[p] !== known[p] && mine(p)).sort();
      const drop = Object.keys(known).filter((p) => p.startsWith(root) && !(p in remote) && mine(p)).sort().reverse();
      if (!load.length && !drop.length) return;
      return transact(mount, false, (store, fail) => {
        for (const p of load)
          IDBFS.loadRemoteEntry(store, p, (err, entry) => {
            if (err) return fail(err);
            let now;  // the program may have written it since the local set was read
            try { now = FS.stat(p).mtime.getTime(); } catch (e) { now = undefined; }
            if (now !== local[p]) return;
            // The time of the entry read, not of the set read before it: another tab may have written
            // the file in between, and a stale time here would mark the file as changed by this tab
            // (never read in again, and written back over the other tab's work).
            IDBFS.storeLocalEntry(p, entry, (e) => (e ? fail(e) : (known[p] = entry.timestamp.getTime())));
          });
      }).then(() => {
        for (const p of drop) IDBFS.removeLocalEntry(p, (e) => { if (!e) delete known[p]; });
      });
    })));
  }
  // Called by the program before main() goes on (platform_web.cpp): the folders, read.
  opscope.mountStorage = function (home) {
    for (const dir of ['.config', '.local']) {
      const path = home + '/' + dir;
      try { FS.mkdir(path); } catch (e) {}
      FS.mount(IDBFS, {}, path);
      storage.mounts.push({ mountpoint: path });
    }
    return settle((cb) => FS.syncfs(true, cb))
      .catch((err) => console.warn('opscope: could not read the saved progress:', err))
      .then(() => Promise.all(storage.mounts.map((m) => settle((cb) => IDBFS.getLocalSet(m, cb)))))
      .then((sets) => {
        for (const set of sets) Object.assign(storage.known, times(set));
        opscope.storageReady = true;  // files may be kept there now
      });
  };
  let pushQueued = null;
  opscope.persistNow = function () {
    if (!opscope.storageReady) return Promise.resolve();
    if (!pushQueued) pushQueued = serial(() => { pushQueued = null; return push(); });
    return pushQueued;
  };
  opscope.persist = function () { opscope.persistNow(); };
  opscope.refreshStorage = function () { return opscope.storageReady ? serial(pull) : Promise.resolve(); };
  if (channel) channel.onmessage = () => opscope.refreshStorage();
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) opscope.persistNow();
    else opscope.refreshStorage();
  });

  // [SECTION] Downloads: a file the program wrote for the user
  const mime = { svg: 'image/svg+xml', png: 'image/png', csv: 'text/csv', json: 'application/json' };
  opscope.download = function (path) {
    let bytes;
    try {
      bytes = FS.readFile(path);
    } catch (e) {
      console.error('opscope: cannot offer ' + path + ' as a download:', e);
      return;
    }
    const name = path.split('/').pop();
    const ext = name.split('.').pop().toLowerCase();
    const blob = new Blob([bytes], { type: mime[ext] || 'application/octet-stream' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = name;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60000);
    opscope.downloads.push({ name: name, size: bytes.length });
  };

  // [SECTION] Files from the user's computer: File > Open's chooser, or dropped on the page
  opscope.openFile = function (name, bytes) {
    const safe = name.replace(/[\/\\\n\r]/g, '_').replace(/^\.+/, '_') || 'file';
    // (A file dropped while the page loads, before IndexedDB is mounted, would be hidden by the mount.)
    const kept = opscope.storageReady && bytes.length <= KEEP_UPLOAD_BYTES, dir = kept ? KEPT_UPLOADS : UPLOADS;
    FS.mkdirTree(dir);
    const path = dir + '/' + safe;
    FS.writeFile(path, bytes);
    if (kept && opscope.persist) opscope.persist();
    opscope.picked.push(path);
    if (opscope.wake) opscope.wake();  // an idle window waits for input: this is some
    return path;
  };
  function readFiles(files) {
    for (const f of files)
      f.arrayBuffer().then((buf) => opscope.openFile(f.name, new Uint8Array(buf)),
                           (e) => console.error('opscope: cannot read ' + f.name + ':', e));
  }
  opscope.pickFile = function (accept) {
    const input = document.createElement('input');
    input.type = 'file';
    input.accept = accept;
    input.multiple = true;
    input.addEventListener('change', () => readFiles(input.files));
    input.click();
  };
  opscope.takePicked = function () {
    const out = opscope.picked;
    opscope.picked = [];
    return out;
  };
  window.addEventListener('dragover', (e) => e.preventDefault());
  window.addEventListener('drop', (e) => {
    e.preventDefault();
    if (e.dataTransfer && e.dataTransfer.files.length) readFiles(e.dataTransfer.files);
  });

  // [SECTION] Input a person gives, beyond what Emscripten's GLFW carries (window_web.cpp)
  const input = { wheel: { x: 0, y: 0 }, text: '', field: null, composing: false, typed: false };
  opscope.input = input;
  // The wheel in notches, down and right positive, whatever a notch scrolls where (Chrome: 100
  // pixels on Windows, other numbers elsewhere; Firefox: 3 lines): the desktop's GLFW gives one
  // unit a notch, and ImGui scrolls 5 lines or zooms one step a unit. A notched wheel says its
  // notches in the legacy wheelDelta (120 each); a touchpad's small steps count 100 pixels a notch.
  function notches(e) {
    let dx = e.deltaX, dy = e.deltaY, wx = e.wheelDeltaX || 0, wy = e.wheelDeltaY || 0;
    if (e.shiftKey && !dy && dx) [dx, dy, wx, wy] = [0, dx, 0, wx];  // sideways by the browser: ImGui does that itself
    const axis = (d, wd) => {
      if (!d) return 0;
      if (e.deltaMode === 1) return d / 3;
      if (e.deltaMode === 2) return d * 4;
      if (Math.abs(d) >= 40 && wd && wd % 120 === 0) return -wd / 120;
      return d / 100;
    };
    return { x: axis(dx, wx), y: axis(dy, wy) };
  }
  input.takeWheel = function () {
    const w = input.wheel;
    input.wheel = { x: 0, y: 0 };  // GLFW may pass one event on twice (wheel, mousewheel)
    return w;
  };
  // A hidden text field has the focus while ImGui wants text: input methods (every Chinese one),
  // on-screen keyboards and dictation commit their text there. Keys typed there reach GLFW as
  // before (it listens on the window); only text that came without a keypress is passed on.
  // Text to type in has arrived: the program takes it now (window_web.cpp), as GLFW's keypress does.
  input.commit = function (text) {
    input.text += text;
    if (window.Module && Module._opscope_text_committed) Module._opscope_text_committed();
    if (opscope.wake) opscope.wake();  // an idle window draws it (a clipboard read comes with no event)
  };
  input.textWanted = function (wanted) {
    const f = input.field;
    if (!f) return;
    if (wanted && document.activeElement !== f) f.focus({ preventScroll: true });
    else if (!wanted && document.activeElement === f) f.blur();
  };
  input.imeAt = function (x, y) {
    if (!input.field) return;
    input.field.style.left = x + 'px';
    input.field.style.top = y + 'px';
  };
  input.install = function () {
    const f = document.createElement('textarea');
    f.id = 'text-input';
    f.setAttribute('aria-label', 'opscope text input');
    for (const [k, v] of [['autocomplete', 'off'], ['autocorrect', 'off'], ['autocapitalize', 'off'], ['spellcheck', 'false']])
      f.setAttribute(k, v);
    document.body.appendChild(f);
    input.field = f;
    window.addEventListener('wheel', (e) => { input.wheel = notches(e); }, true);
    window.addEventListener('keydown', () => { input.typed = false; }, true);
    window.addEventListener('keypress', (e) => {  // GLFW types this one itself
      if (e.charCode >= 32 && !e.ctrlKey && !e.metaKey) input.typed = true;
    }, true);
    window.addEventListener('keyup', () => { input.typed = false; }, true);
    f.addEventListener('compositionstart', () => { input.composing = true; });
    f.addEventListener('compositionend', (e) => {
      input.composing = false;
      if (e.data) input.commit(e.data);
      f.value = '';
    });
    f.addEventListener('input', (e) => {
      if (e.isComposing || input.composing) return;
      if (e.inputType === 'insertText' && e.data && !input.typed) input.commit(e.data);
      input.typed = false;
      f.value = '';
    });
    // A click on the window keeps the focus in the field (its blur would release held keys: Shift+click).
    opscope.canvasElement().addEventListener('mousedown', (e) => {
      if (document.activeElement === f) e.preventDefault();
    }, true);
  };
  opscope.canvasElement = () => document.getElementById('canvas');

  // [SECTION] The clipboard: the browser's (Emscripten's GLFW has none)
  // Copy: navigator.clipboard.writeText, and a copy kept here. Paste (Ctrl+V): the paste event the
  // browser fires with the key gives the text before ImGui asks for it in the next frame; where no
  // paste event came, the Clipboard API is asked and its answer typed in when it comes.
  // A paste is typed in once: where ImGui asked first (and got nothing) and the paste event came
  // after, the event types it in and the Clipboard API's answer, which comes later, is dropped
  // (`lateRead` names the one read still allowed to type; both once typed it twice).
  const clipboard = { text: '', waiting: false, viaMeta: false, lateRead: 0, reads: 0 };
  opscope.clipboard = clipboard;
  clipboard.write = function (text) {
    clipboard.text = text;
    if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(text).catch(() => {});
  };
  clipboard.read = function () {
    if (!clipboard.waiting) return clipboard.text;
    clipboard.waiting = false;
    if (!navigator.clipboard || !navigator.clipboard.readText) return clipboard.text;
    const read = ++clipboard.reads;
    clipboard.lateRead = read;
    const typeIn = (t) => {
      if (clipboard.lateRead !== read) return;  // the paste event typed it in meanwhile
      clipboard.lateRead = 0;
      input.commit(t);
    };
    navigator.clipboard.readText().then((t) => { clipboard.text = t; typeIn(t); }, () => typeIn(clipboard.text));
    return '';
  };
  window.addEventListener('keydown', (e) => {
    if (e.keyCode === 86 && (e.ctrlKey || e.metaKey)) {
      clipboard.waiting = true;
      clipboard.viaMeta = e.metaKey && !e.ctrlKey;
    }
  }, true);
  window.addEventListener('paste', (e) => {
    const t = e.clipboardData ? e.clipboardData.getData('text/plain') : null;
    if (typeof t === 'string') {
      // ImGui pastes on Ctrl+V itself; Cmd+V (a Mac) and a menu's Paste into the field are typed in.
      const imgui = clipboard.waiting && !clipboard.viaMeta;
      if (!imgui && (clipboard.viaMeta || e.target === input.field)) {
        clipboard.lateRead = 0;
        input.commit(t);
      }
      clipboard.text = t;
      clipboard.waiting = false;
    }
    clipboard.viaMeta = false;
    if (e.target === input.field) e.preventDefault();
  }, true);

  // [SECTION] Start, frames, end
  function fail(text) {
    opscope.errors.push(String(text));
    document.getElementById('failed-text').textContent = String(text);
    document.getElementById('failed').hidden = false;
    loading.hidden = true;
  }
  opscope.frameDrawn = function () {
    if (opscope.firstFrameMs === null) {
      opscope.firstFrameMs = performance.now();
      loading.hidden = true;
    }
  };
  opscope.finished = function (code) {
    opscope.exitCode = code;
    window.dispatchEvent(new CustomEvent('opscope-exit', { detail: code }));
  };
  window.addEventListener('error', (e) => opscope.errors.push(String(e.message || e)));
  window.addEventListener('unhandledrejection', (e) => opscope.errors.push(String(e.reason)));

  if (!document.createElement('canvas').getContext('webgl2'))
    fail('This browser has no WebGL2, which opscope draws with. Any current Chrome, Edge, Firefox or Safari has it.');

  window.Module = {
    canvas: document.getElementById('canvas'),
    print: (text) => console.log(text),
    printErr: (text) => console.warn(text),
    preRun: [() => {
      // Fashion-MNIST files the user opens are kept here (and persist), before the site's subset.
      ENV.OPSCOPE_DATA = HOME + '/.local/share/opscope/data';
      // Files a test or tool puts in place before main() runs (tools/web_driver.py).
      const bytes = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      for (const [path, b64] of Object.entries(window.opscopePreload || {})) {
        FS.mkdirTree(path.substring(0, path.lastIndexOf('/')) || '/');
        FS.writeFile(path, bytes(b64));
      }
      // ... and files opened as if chosen in File > Open (the same path as the chooser's).
      for (const [name, b64] of Object.entries(window.opscopeOpen || {})) opscope.openFile(name, bytes(b64));
    }],
    setStatus: (text) => {
      const m = /^([^(]+)\((\d+(?:\.\d+)?)\/(\d+)\)/.exec(text || '');
      if (m) {
        loadingText.textContent = 'Downloading opscope: ' + (m[2] / 1048576).toFixed(1) + ' of ' + (m[3] / 1048576).toFixed(1) + ' MB';
        loadingBar.value = m[2] / m[3];
      } else if (text) {
        loadingText.textContent = text;
      }
    },
    onAbort: (what) => fail('The program stopped: ' + what),
  };

  // Offline once loaded: the service worker keeps the site's files (secure contexts only:
  // https, or 127.0.0.1 / localhost).
  if ('serviceWorker' in navigator && window.isSecureContext)
    navigator.serviceWorker.register('sw.js').catch((e) => console.warn('opscope: no offline copy:', e.message));
})();
