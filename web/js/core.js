// privgen dashboard, shared core: plain JavaScript, no framework, no external
// assets. The page's state, the HTTP calls to the /v1 API (bearer token kept in
// localStorage), DOM and number helpers, field errors, sign in and out.
// index.html loads the scripts in order: core, datasets, jobs, newjob,
// reports, main. They share one global scope; only main.js starts anything
// at load, once every other script has defined its functions.
'use strict';

const state = {
  token: localStorage.getItem('privgen.token') || '',
  datasets: [], jobs: [], algorithms: [],
  dataset: null,        // id of the open dataset
  selected: null,       // id of the open job
  history: [],          // the open job's loss history (the list carries none)
  stream: null, imgTimer: null, pollTimer: null,
};
const $ = (id) => document.getElementById(id);
const POLL_BUSY_MS = 2000, POLL_IDLE_MS = 5000;

// ---- HTTP -------------------------------------------------------------------

async function api(path, opts = {}) {
  const headers = Object.assign({ Authorization: 'Bearer ' + state.token }, opts.headers || {});
  const res = await fetch(path, Object.assign({}, opts, { headers }));
  if (res.status === 401) { signOut('Your token was refused.'); throw new Error('unauthorized'); }
  return res;
}

// A failed call throws an Error carrying the problem+json body (detail, errors[]).
async function problemOf(res) {
  const body = await res.json().catch(() => ({}));
  const e = new Error(body.detail || body.title || `${res.status} ${res.statusText}`);
  e.body = body; e.status = res.status;
  return e;
}

async function apiJSON(path, opts) {
  const res = await api(path, opts);
  if (!res.ok) throw await problemOf(res);
  if (res.status === 204) return {};
  return res.json();
}

// ---- small helpers ------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v; else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

// Numbers as a person writes them: 3 significant digits, no float noise,
// exponent only for tiny values (1e-5, not 0.0000100).
function fmt(x, digits = 3) {
  if (x === null || x === undefined || (typeof x === 'number' && !Number.isFinite(x))) return '–';
  if (typeof x !== 'number') return String(x);
  if (x === 0) return '0';
  const a = Math.abs(x);
  if (a < 1e-3) return x.toExponential(Math.max(0, digits - 2)).replace(/\.?0+e/, 'e').replace('e-', 'e−');
  if (a >= 1e5) return Math.round(x).toLocaleString('en');
  return String(Number(x.toPrecision(digits)));
}

function bytes(n) {
  if (!Number.isFinite(n)) return '–';
  const u = ['B', 'kB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return `${i ? n.toPrecision(3) : n} ${u[i].replace('kB', 'KiB').replace('MB', 'MiB').replace('GB', 'GiB').replace('TB', 'TiB')}`;
}

function facts(dl, pairs) {
  dl.replaceChildren(...pairs.filter((p) => p).flatMap(([k, v]) =>
    [el('dt', { text: k }), el('dd', {}, typeof v === 'string' || typeof v === 'number' ? String(v) : v ?? '–')]));
}

function td(label, ...content) { return el('td', { 'data-label': label }, el('span', { class: 'v' }, ...content)); }

// ---- field errors: problem+json errors[] shown beside the field they name ----

function clearErrors(form) {
  form.querySelectorAll('.field-error').forEach((e) => e.remove());
  form.querySelectorAll('.invalid').forEach((e) => e.classList.remove('invalid'));
  const list = form.querySelector('.form-errors');
  if (list) list.replaceChildren();
}

// The element for a field: exact data-field match, else a child field
// (privacy.budget -> privacy.budget.epsilon), else the parent (rows[3] -> rows).
function fieldElement(form, field) {
  const all = [...form.querySelectorAll('[data-field]')];
  let f = field;
  while (f) {
    const hit = all.find((e) => e.dataset.field === f) || all.find((e) => e.dataset.field.startsWith(f + '.'));
    if (hit) return hit;
    const cut = Math.max(f.lastIndexOf('.'), f.lastIndexOf('['));
    f = cut > 0 ? f.slice(0, cut) : '';
  }
  return null;
}

function showErrors(form, err) {
  clearErrors(form);
  const body = err.body || {};
  const errs = body.errors && body.errors.length ? body.errors : [{ field: '', message: err.message }];
  const list = form.querySelector('.form-errors');
  let placed = 0;
  for (const e of errs) {
    // A form with one input takes the errors that name no field (e.g. a CSV parse error).
    const field = e.field || form.dataset.defaultField;
    const target = field ? fieldElement(form, field) : null;
    if (!target) { list.append(el('li', { text: (e.field ? e.field + ': ' : '') + e.message })); continue; }
    target.classList.add('invalid');
    target.setAttribute('aria-invalid', 'true');
    const box = target.closest('.f, fieldset, .row') || target;
    box.append(el('span', { class: 'field-error', role: 'alert', text: e.message }));
    const det = target.closest('details');
    if (det) det.open = true;
    if (!placed++) target.focus({ preventScroll: false });
  }
  // The detail often says more than the field message (e.g. the numbers of an over-budget job).
  if (placed && body.detail && !errs.some((e) => body.detail.endsWith(e.message)))
    list.append(el('li', { text: body.detail }));
}

// ---- sign in / out -------------------------------------------------------------

function signOut(message) {
  localStorage.removeItem('privgen.token');
  state.token = '';
  stopStream();
  clearTimeout(state.pollTimer);
  $('app').hidden = true; $('logout').hidden = true; $('login').hidden = false;
  $('who').textContent = '';
  $('login-error').textContent = message || '';
}

async function signIn(token) {
  state.token = token;
  try {
    await apiJSON('/v1/datasets?limit=1');
  } catch (e) { if (e.message !== 'unauthorized') $('login-error').textContent = e.message; return; }
  localStorage.setItem('privgen.token', token);
  $('login').hidden = true; $('app').hidden = false; $('logout').hidden = false;
  $('who').textContent = 'token …' + token.slice(-4);
  await refreshAll();
  schedulePoll();
}

async function listAll(path) {
  let items = [], cursor = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const page = await apiJSON(path + sep + 'limit=100' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
    items = items.concat(page.items || []);
    cursor = page.next_cursor;
  } while (cursor && items.length < 1000);
  return items;
}
