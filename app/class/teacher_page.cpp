#include "app/class/teacher_page.h"

namespace opscope::classroom {

const char* teacher_html() {
  return R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>opscope class</title><link rel="stylesheet" href="/teacher.css"></head>
<body>
<header><h1 data-t="title">Class</h1>
<span id="class-name"></span>
<span id="status"></span>
<button id="csv" data-t="csv">Export CSV</button>
<button id="lang">中文</button></header>
<main>
<section><h2 data-t="grid">Students × exercises</h2><div id="grid-wrap"><table id="grid"></table></div></section>
<section><h2 data-t="stuck">Stuck now</h2><ul id="stuck"></ul></section>
<section><h2 data-t="exercises">Exercises</h2><div id="exercises"></div></section>
</main>
<dialog id="code"><h3 id="code-title"></h3><pre id="code-feedback"></pre><pre id="code-text"></pre><button id="code-close" data-t="close">Close</button></dialog>
<script src="/teacher.js"></script>
</body></html>
)";
}

// Every string from the server goes into the page through textContent or a text attribute.
const char* teacher_js() {
  return R"JS('use strict';
const T = {
  en: {title: 'Class', grid: 'Students × exercises', stuck: 'Stuck now', exercises: 'Exercises', csv: 'Export CSV',
       close: 'Close', student: 'Student', lesson: 'Lesson', passRate: 'pass rate', pending: 'pending',
       tries: ['try', 'tries'], hints: ['hint', 'hints'], students: ['student', 'students'], attempts: ['attempt', 'attempts'],
       none: 'nobody', noFailures: 'no failing checks', updated: 'updated', notYet: 'not started', done: 'finished',
       offline: 'cannot reach the server', mismatch: 'the client claimed another result', code: 'code of',
       stuckOn: 'stuck on', last: 'last',
       status: {fail: 'fail', error: 'error', timeout: 'timeout', 'out of memory': 'out of memory'}},
  zh: {title: '班级', grid: '学生 × 练习', stuck: '现在卡住的学生', exercises: '练习', csv: '导出 CSV',
       close: '关闭', student: '学生', lesson: '课程', passRate: '通过率', pending: '待评分',
       tries: '次尝试', hints: '次提示', students: '名学生', attempts: '次提交',
       none: '无', noFailures: '没有未通过的检查', updated: '更新于', notYet: '尚未开始', done: '已学完',
       offline: '无法连接服务器', mismatch: '客户端声称的结果不同', code: '代码：',
       stuckOn: '卡在', last: '最近',
       status: {fail: '未通过', error: '出错', timeout: '超时', 'out of memory': '内存不足'}},
};
const params = new URLSearchParams(location.search);
const key = params.get('key') || sessionStorage.getItem('opscope-teacher-key') || '';
sessionStorage.setItem('opscope-teacher-key', key);
history.replaceState(null, '', location.pathname);  // the key leaves the address bar
let lang = localStorage.getItem('opscope-teacher-lang') || (navigator.language.startsWith('zh') ? 'zh' : 'en');
let last = null;

const t = (k) => T[lang][k] || T.en[k] || k;
// "1 try", "2 tries"; Chinese counts without a plural ("1 次尝试").
const count = (n, k) => {
  const w = t(k);
  return n + ' ' + (Array.isArray(w) ? w[n === 1 ? 0 : 1] : w);
};
// Where a student's site is: "03 · Backward · 12/40", or finished.
function lessonText(at) {
  if (!at) return t('notYet');
  const where = at.finished ? t('done') : at.block + '/' + at.blocks;
  return at.lesson + (at.title ? ' · ' + at.title : '') + ' · ' + where;
}
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = String(text);
  return e;
};
const api = (path) => fetch(path, {headers: {Authorization: 'Bearer ' + key}, cache: 'no-store'});

function applyLabels() {
  document.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en';
  for (const e of document.querySelectorAll('[data-t]')) e.textContent = t(e.dataset.t);
  document.getElementById('lang').textContent = lang === 'zh' ? 'English' : '中文';
}

async function openCode(attemptId, name, exercise) {
  const r = await api('/api/teacher/attempts/' + encodeURIComponent(attemptId));
  if (!r.ok) return;
  const a = await r.json();
  document.getElementById('code-title').textContent = t('code') + ' ' + name + ' · ' + exercise + ' · ' + (a.status || t('pending'));
  const failing = (a.failures || []).map((f) => f.check + (f.message ? ': ' + f.message : '')).join('\n');
  document.getElementById('code-feedback').textContent = failing || a.feedback || '';
  document.getElementById('code-text').textContent = a.code;
  document.getElementById('code').showModal();
}

function cell(r, name, exercise) {
  const td = el('td', 'cell');
  if (!r) {
    td.textContent = '·';
    return td;
  }
  td.classList.add(r.passed ? 'pass' : r.grade === '-' ? 'waiting' : 'fail');
  if (r.stuck) td.classList.add('stuck');
  // The grade's first word is translated; "fail 2/3" keeps its counts.
  const word = r.grade.replace(/ \d+\/\d+$/, '');
  const shown = (T[lang].status[word] || word) + r.grade.slice(word.length);
  const b = el('button', 'grade', r.passed ? '✓' : r.grade === '-' ? '…' : shown);
  b.addEventListener('click', () => openCode(r.latest_attempt_id, name, exercise));
  td.append(b);
  td.append(el('div', 'meta', count(r.attempts, 'tries') + ' · ' + count(r.hints, 'hints') +
                (r.pending ? ' · ' + r.pending + ' ' + t('pending') : '')));
  if (r.last_at) td.append(el('div', 'meta', t('last') + ' ' + new Date(r.last_at).toLocaleTimeString()));
  if (r.mismatches) td.append(el('div', 'mismatch', '⚠ ' + t('mismatch')));
  td.title = r.last_at || '';
  return td;
}

function drawGrid(s) {
  const table = document.getElementById('grid');
  table.replaceChildren();
  const head = el('tr');
  head.append(el('th', '', t('student')), el('th', '', t('lesson')));
  for (const e of s.exercises) {
    const th = el('th', '', e.id);
    th.title = e.title || '';
    head.append(th);
  }
  table.append(head);
  for (const st of s.students) {
    const tr = el('tr');
    tr.append(el('th', 'name', st.name), el('td', 'lesson', lessonText(st.lesson)));
    for (const e of s.exercises) tr.append(cell(st.results[e.id], st.name, e.id));
    table.append(tr);
  }
}

function drawStuck(s) {
  const ul = document.getElementById('stuck');
  ul.replaceChildren();
  for (const st of s.students)
    for (const [ex, r] of Object.entries(st.results))
      if (r.stuck) {
        const li = el('li');
        const b = el('button', 'link', st.name);
        b.addEventListener('click', () => openCode(r.latest_attempt_id, st.name, ex));
        li.append(b, el('span', '', ' ' + t('stuckOn') + ' ' + ex + ' (' + count(r.attempts, 'attempts') + ')'));
        ul.append(li);
      }
  if (!ul.children.length) ul.append(el('li', 'quiet', t('none')));
}

function drawExercises(s) {
  const box = document.getElementById('exercises');
  box.replaceChildren();
  for (const e of s.exercises) {
    const div = el('div', 'exercise');
    const h = el('h3', '', e.id + (e.title ? ' · ' + e.title : ''));
    const rate = Math.round(100 * e.pass_rate);
    const bar = el('div', 'bar');
    const fill = el('div', 'fill');
    fill.style.width = rate + '%';
    bar.append(fill);
    div.append(h, el('div', 'rate', t('passRate') + ' ' + rate + '% (' + e.passed + '/' + e.tried + ')'), bar);
    const ul = el('ul', 'clusters');
    for (const f of e.common_failures) {
      const li = el('li');
      const d = el('details');
      d.dataset.key = e.id + '\n' + f.check;
      d.append(el('summary', '', f.check + ': ' + count(f.count, 'students')));
      if (f.message) d.append(el('div', 'message', f.message));
      f.students.forEach((name, i) => {
        const b = el('button', 'link', name);
        b.addEventListener('click', () => openCode(f.attempt_ids[i], name, e.id));
        d.append(b);
      });
      li.append(d);
      ul.append(li);
    }
    if (!e.common_failures.length) ul.append(el('li', 'quiet', t('noFailures')));
    div.append(ul);
    box.append(div);
  }
}

function draw() {
  applyLabels();
  if (!last) return;
  // An open cluster stays open across a redraw.
  const open = new Set([...document.querySelectorAll('details[open]')].map((x) => x.dataset.key));
  document.getElementById('class-name').textContent = last.class || '';
  drawGrid(last);
  drawStuck(last);
  drawExercises(last);
  for (const d of document.querySelectorAll('details')) if (open.has(d.dataset.key)) d.open = true;
}

async function poll() {
  try {
    const r = await api('/api/teacher/summary');
    if (!r.ok) throw new Error(r.status);
    last = await r.json();
    draw();
    document.getElementById('status').textContent = t('updated') + ' ' + new Date().toLocaleTimeString() + ' · ' +
        count(last.attempts, 'attempts') + ' · ' + last.pending + ' ' + t('pending');
    document.body.dataset.ready = '1';
  } catch (err) {
    document.getElementById('status').textContent = t('offline') + ' (' + err.message + ')';
  }
}

async function exportCsv() {
  const r = await api('/api/teacher/grades.csv');
  if (!r.ok) return;
  const url = URL.createObjectURL(await r.blob());
  const a = el('a');
  a.href = url;
  a.download = 'grades.csv';
  a.click();
  URL.revokeObjectURL(url);
}

document.getElementById('lang').addEventListener('click', () => {
  lang = lang === 'zh' ? 'en' : 'zh';
  localStorage.setItem('opscope-teacher-lang', lang);
  draw();
});
document.getElementById('csv').addEventListener('click', exportCsv);
document.getElementById('code-close').addEventListener('click', () => document.getElementById('code').close());
applyLabels();
poll();
setInterval(poll, 1500);  // the page is at most 2 s behind the class
)JS";
}

const char* teacher_css() {
  return R"(body { font: 14px system-ui, "Noto Sans CJK SC", sans-serif; margin: 0; color: #222; background: #fafafa; }
header { display: flex; gap: 1em; align-items: center; padding: .5em 1em; background: #263238; color: #fff; }
header h1 { font-size: 1.2em; margin: 0; }
#class-name { font-weight: bold; }
#status { flex: 1; opacity: .8; }
main { padding: 0 1em 2em; }
#grid-wrap { overflow-x: auto; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ddd; padding: .3em .5em; text-align: center; vertical-align: top; }
th.name { text-align: left; max-width: 16em; overflow-wrap: anywhere; }
td.lesson { text-align: left; font-size: .85em; color: #444; max-width: 14em; }
td.pass { background: #e8f5e9; }
td.fail { background: #ffebee; }
td.waiting { background: #fffde7; }
td.stuck { outline: 2px solid #c62828; outline-offset: -2px; }
td .meta { font-size: .75em; color: #666; }
td .mismatch { font-size: .75em; color: #e65100; }
button.grade, button.link { border: none; background: none; cursor: pointer; font: inherit; color: #1565c0; }
button.link { text-decoration: underline; margin-right: .5em; }
.exercise { border: 1px solid #ddd; background: #fff; padding: .5em 1em; margin: .5em 0; }
.exercise h3 { margin: .2em 0; font-size: 1em; }
.bar { height: 6px; background: #eee; }
.bar .fill { height: 6px; background: #43a047; }
.clusters .message { color: #555; font-size: .9em; margin: .2em 0; white-space: pre-wrap; }
.quiet { color: #888; }
dialog { max-width: 80vw; }
dialog pre { background: #f5f5f5; padding: .5em; max-height: 60vh; overflow: auto; white-space: pre-wrap; }
)";
}

}  // namespace opscope::classroom
