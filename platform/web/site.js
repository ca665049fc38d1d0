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

  // [SECTION] Persistent storage: IndexedDB behind ~/.config and ~/.local
  let syncing = null, again = false;
  function syncfs() {
    if (syncing) {
      again = true;
      return syncing;
    }
    syncing = new Promise((resolve) => {
      FS.syncfs(false, (err) => {
        if (err) console.warn('opscope: could not save to IndexedDB:', err);
        resolve();
      });
    }).then(() => {
      syncing = null;
      if (again) {
        again = false;
        return syncfs();
      }
    });
    return syncing;
  }
  opscope.persist = function () { syncfs(); };
  opscope.persistNow = function () { return syncfs(); };
  document.addEventListener('visibilitychange', () => {
    if (document.hidden && typeof FS !== 'undefined') syncfs();
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
