// The site's side of a class (`opscope class serve --site`, app/class/): opened from a class
// server's address, the site offers to join once (the class code and a name, or a roster
// student's own link ?join=TOKEN, which joins without typing) and remembers it in this browser.
// Then every exercise attempt (its code, the hints used, the local result) and the lesson the
// student is at (platform_web.cpp: report_to_class calls opscope.classReport) are queued in
// IndexedDB first, an outbox, and sent oldest first while the server answers, retried with
// backoff when it does not. An attempt's idempotency key is made when it is queued: a dropped
// connection, a closed tab or a restarted server loses nothing, and a send repeated after a lost
// answer counts once (the server keeps one attempt per key). Opened from a plain static host
// (its page not marked X-Opscope-Class), nothing here runs and nothing is kept.
'use strict';

(function () {
  const opscope = window.opscope || (window.opscope = {});
  const REMEMBERED = 'opscope-class';  // localStorage (this origin, so this class): {token, name, class}
  const DB = 'opscope-class', OUTBOX = 'outbox';
  const RETRY_MS = [1000, 2000, 4000, 8000, 15000];  // then every 15 s, while the page is open
  // What tests and the page read: whether a class is here, who joined, what waits to be sent.
  const cls = {
    present: false, className: '', name: '', queued: 0, acknowledged: [], rejected: [], lastError: '', dialogOpen: false,
  };
  opscope.classroom = cls;
  const early = [];  // reports made before the server was asked whether a class is here
  let probed = false;
  const zh = /^zh/.test(new URLSearchParams(location.search).get('lang') || navigator.language || '');
  const say = (en, cn) => (zh ? cn : en);

  function remembered() {
    try { return JSON.parse(localStorage.getItem(REMEMBERED) || 'null'); } catch (e) { return null; }
  }
  function remember(r) {
    if (r) localStorage.setItem(REMEMBERED, JSON.stringify(r));
    else localStorage.removeItem(REMEMBERED);
  }
  function newKey() {
    if (crypto.randomUUID) return crypto.randomUUID();  // secure contexts only (https, 127.0.0.1)
    return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
  }
  const post = (path, body, token) => fetch(path, {
    method: 'POST', cache: 'no-store', body: JSON.stringify(body),
    headers: Object.assign({ 'Content-Type': 'application/json' }, token ? { Authorization: 'Bearer ' + token } : {}),
  });

  // [SECTION] The outbox: IndexedDB, oldest first
  let dbOpen = null;
  function db() {
    if (!dbOpen)
      dbOpen = new Promise((resolve, reject) => {
        const req = indexedDB.open(DB, 1);
        req.onupgradeneeded = () => req.result.createObjectStore(OUTBOX, { autoIncrement: true });
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error);
      });
    return dbOpen;
  }
  function outbox(mode, work) {
    return db().then((d) => new Promise((resolve, reject) => {
      const t = d.transaction(OUTBOX, mode);
      let result;
      t.oncomplete = () => resolve(result);
      t.onerror = () => reject(t.error);
      t.onabort = () => reject(t.error);
      work(t.objectStore(OUTBOX), (v) => { result = v; });
    }));
  }
  // Queued before it is sent: committed to IndexedDB when this resolves. The lesson the student
  // is at replaces the one queued before (only the latest matters).
  function enqueue(kind, body) {
    if (kind === 'attempt') body.idempotency_key = newKey();
    return outbox('readwrite', (store) => {
      if (kind === 'progress')
        store.openCursor().onsuccess = (e) => {
          const c = e.target.result;
          if (!c) return store.add({ kind, body });
          if (c.value.kind === 'progress') c.delete();
          c.continue();
        };
      else store.add({ kind, body });
    }).then(countQueued, (e) => { cls.lastError = 'IndexedDB: ' + e; console.warn('opscope: the class outbox:', e); });
  }
  function oldest() {
    return outbox('readonly', (store, done) => {
      store.openCursor().onsuccess = (e) => {
        const c = e.target.result;
        done(c ? { key: c.key, value: c.value } : null);
      };
    });
  }
  const removeQueued = (key) => outbox('readwrite', (store) => store.delete(key));
  function countQueued() {
    return outbox('readonly', (store, done) => { store.count().onsuccess = (e) => done(e.target.result); })
      .then((n) => { cls.queued = n; showWaiting(); });
  }

  // [SECTION] Sending: one at a time, oldest first, backoff while the server is away
  let sending = false, failures = 0, retryTimer = null;
  // 'sent', 'dropped' (the server refuses it for good: a 400 or 413 is not retried), 'auth' (the
  // token is no longer this class's) or 'retry' (no answer, 429, or the server's own error).
  async function sendOne(item, token) {
    let res;
    try {
      res = await post(item.kind === 'attempt' ? 'api/attempts' : 'api/progress', item.body, token);
    } catch (e) {
      cls.lastError = say('the class server does not answer', '连接不到班级服务器');
      return 'retry';
    }
    if (res.ok) {
      if (item.kind === 'attempt') {
        const a = await res.json().catch(() => ({}));
        cls.acknowledged.push({ key: item.body.idempotency_key, exercise: item.body.exercise, attempt_id: a.attempt_id, duplicate: !!a.duplicate });
      }
      return 'sent';
    }
    if (res.status === 401 || res.status === 403) return 'auth';
    if (res.status === 429 || res.status === 408 || res.status >= 500) {
      cls.lastError = 'HTTP ' + res.status;
      return 'retry';
    }
    const why = await res.json().then((j) => j.error, () => '');
    cls.rejected.push({ kind: item.kind, status: res.status, error: String(why || '') });
    console.warn('opscope: the class server refused a ' + item.kind + ' (' + res.status + '): ' + why);
    return 'dropped';
  }
  async function drain() {
    const me = remembered();
    if (sending || !me) return;
    sending = true;
    clearTimeout(retryTimer);
    retryTimer = null;
    try {
      for (let item = await oldest(); item; item = await oldest()) {
        const how = await sendOne(item.value, me.token);
        if (how === 'sent' || how === 'dropped') {
          await removeQueued(item.key);
          failures = 0;
          cls.lastError = '';
        } else if (how === 'auth') {  // the class was made anew, or the token is not this class's
          remember(null);
          cls.name = '';
          offerJoin(say('This class does not know you (any more): join again.', '这个班级不认识你（或不再认识）：请重新加入。'));
          break;
        } else {
          const wait = RETRY_MS[Math.min(failures++, RETRY_MS.length - 1)];
          retryTimer = setTimeout(drain, wait * (0.75 + 0.5 * Math.random()));  // a room's browsers apart
          break;
        }
      }
    } catch (e) {
      cls.lastError = String(e);
      retryTimer = setTimeout(drain, RETRY_MS[RETRY_MS.length - 1]);
    } finally {
      sending = false;
      await countQueued().catch(() => {});
    }
    // Queued while the last send was under way, after the loop found the outbox empty.
    if (cls.queued && !retryTimer && remembered()) drain();
  }
  window.addEventListener('online', () => drain());

  // Called by the program (platform_web.cpp): kind "attempt" or "progress", JSON text.
  opscope.classReport = function (kind, json) {
    let body;
    try { body = JSON.parse(json); } catch (e) { return; }
    if (!probed) return void early.push([kind, body]);
    if (cls.present) enqueue(kind, body).then(drain);
  };

  // [SECTION] What the student sees: joining, and work waiting to be sent
  const waiting = document.createElement('div');
  waiting.id = 'class-waiting';
  waiting.hidden = true;
  function showWaiting() {
    if (!document.body.contains(waiting)) document.body.appendChild(waiting);
    // Only while something waits and the last send failed: nothing to see while all goes well.
    waiting.hidden = !(cls.queued > 0 && cls.lastError);
    waiting.textContent = say(cls.queued + ' waiting to be sent to the class (' + cls.lastError + ')',
                              cls.queued + ' 项等待发送到班级（' + cls.lastError + '）');
  }

  let dialog = null;
  function field(label, id, value) {
    const l = document.createElement('label');
    l.textContent = label;
    const input = document.createElement('input');
    input.id = id;
    input.maxLength = 80;
    input.autocomplete = 'off';
    input.spellcheck = false;
    input.value = value || '';
    l.appendChild(input);
    return l;
  }
  function offerJoin(why) {
    if (dialog) return;
    dialog = document.createElement('dialog');
    dialog.id = 'class-join';
    const form = document.createElement('form');
    const h = document.createElement('h2');
    h.textContent = say('Join the class “' + cls.className + '”', '加入班级“' + cls.className + '”');
    const p = document.createElement('p');
    p.textContent = why || say('Your exercise attempts and the lesson you are at go to your teacher, on this class’s server.',
                               '你的练习提交和所在的课程会发送给老师（这个班级的服务器）。');
    const code = new URLSearchParams(location.search).get('class') || '';
    const error = document.createElement('p');
    error.id = 'class-join-error';
    error.setAttribute('role', 'alert');
    const join = document.createElement('button');
    join.type = 'submit';
    join.textContent = say('Join', '加入');
    const later = document.createElement('button');
    later.type = 'button';
    later.textContent = say('Not now', '以后再说');
    const buttons = document.createElement('div');
    buttons.append(join, later);
    form.append(h, p, field(say('Class code', '班级代码'), 'class-code', code), field(say('Your name', '你的名字'), 'class-student', ''), error, buttons);
    dialog.appendChild(form);
    document.body.appendChild(dialog);
    const close = () => {
      dialog.close();
      dialog.remove();
      dialog = null;
      cls.dialogOpen = false;
    };
    later.addEventListener('click', () => {
      sessionStorage.setItem('opscope-class-later', '1');  // asked again on the next visit; the work waits queued
      close();
    });
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const body = { class_code: form.querySelector('#class-code').value.trim(), name: form.querySelector('#class-student').value.trim() };
      if (!body.class_code || !body.name) return void (error.textContent = say('The class code and your name, please.', '请填写班级代码和你的名字。'));
      join.disabled = true;
      try {
        const res = await post('api/join', body);
        const j = await res.json().catch(() => ({}));
        if (!res.ok) throw new Error(j.error || 'HTTP ' + res.status);
        joined(j);
        close();
      } catch (err) {
        error.textContent = String(err.message || err);  // the server's words, as text
      } finally {
        join.disabled = false;
      }
    });
    dialog.showModal();  // the page behind is inert: the program's hidden text field cannot take the focus
    cls.dialogOpen = true;
    (code ? form.querySelector('#class-student') : form.querySelector('#class-code')).focus();
  }
  // Keys typed in the dialog are the dialog's: the program's window (Emscripten's GLFW listens on
  // the whole window, in the capture phase, registered after this) must not take them too.
  for (const type of ['keydown', 'keypress', 'keyup'])
    window.addEventListener(type, (e) => {
      if (dialog && dialog.contains(e.target)) e.stopImmediatePropagation();
    }, true);

  function joined(j) {
    remember({ token: j.student_token, name: j.name, class: j.class });
    cls.name = j.name;
    drain();
  }

  // [SECTION] Start: is a class here?
  async function start() {
    const me = remembered();
    let info = null;
    try {
      // The class server marks every answer (server.cpp); a static host is asked nothing it lacks.
      const page = await fetch(location.pathname, { method: 'HEAD', cache: 'no-store' });
      if (page.headers.get('X-Opscope-Class')) {
        const res = await fetch('api/class', { cache: 'no-store' });
        if (res.ok && (res.headers.get('Content-Type') || '').startsWith('application/json')) info = await res.json();
      }
    } catch (e) {}
    // A class remembered here is still one while its server is down (restarting, Wi-Fi away).
    cls.present = !!((info && typeof info.class === 'string') || me);
    cls.className = info ? info.class : me ? me.class : '';
    probed = true;
    if (!cls.present) return void (early.length = 0);  // a plain static host: the site as ever
    for (const [kind, body] of early.splice(0)) await enqueue(kind, body);
    const q = new URLSearchParams(location.search);
    if (q.has('join')) {  // a roster student's own link: joins without typing
      const link = q.get('join');
      q.delete('join');
      history.replaceState(null, '', location.pathname + (q.toString() ? '?' + q : ''));  // the token leaves the address bar
      try {
        const res = await post('api/join', { join_token: link });
        const j = await res.json().catch(() => ({}));
        if (res.ok) return void joined(j);
        return void offerJoin(String(j.error || 'HTTP ' + res.status));
      } catch (e) {}
    }
    if (me) {
      cls.name = me.name;
      return void drain();
    }
    if (!sessionStorage.getItem('opscope-class-later')) offerJoin();
  }
  start();
})();
