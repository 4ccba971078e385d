// privgen dashboard: plain JavaScript, no framework, no external assets.
// Talks to the /v1 API with the bearer token kept in localStorage.
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

// ---- datasets -------------------------------------------------------------------

function gauge(spent, cap) {
  const frac = cap > 0 ? Math.min(1, spent / cap) : 0;
  const g = el('span', { class: 'gauge' + (frac >= 0.999 ? ' full' : frac > 0.8 ? ' high' : ''),
                         role: 'meter', 'aria-valuemin': '0', 'aria-valuemax': String(cap),
                         'aria-valuenow': String(spent), title: `ε ${fmt(spent)} of ${fmt(cap)} spent` });
  g.append(el('span', { style: `width:${(100 * frac).toFixed(1)}%` }));
  return el('span', { class: 'gauge-wrap' }, g, el('span', { class: 'gauge-label', text: `ε ${fmt(spent)} / ${fmt(cap)}` }));
}

function privacyText(d) {
  const p = d.privacy || {};
  if (p.model === 'local')
    return `local, ${p.mechanism} ε=${fmt(p.epsilon)}` + (p.mechanism === 'gaussian' ? ` δ=${fmt(p.delta)}` : '');
  if (p.model === 'central') return 'central';
  return p.model || '?';
}

function budgetCell(d) {
  const p = d.privacy || {};
  if (p.model === 'central') {
    const span = el('span', { class: 'hint', text: '…' });
    apiJSON(`/v1/datasets/${d.id}/budget`).then((b) => span.replaceWith(gauge(b.spent_epsilon || 0, (b.cap || {}).epsilon || 0)))
      .catch(() => { span.textContent = 'unavailable'; });
    return span;
  }
  if (p.model === 'local') {
    const shuf = (d.privacy_report || {}).shuffle;
    return el('span', { class: 'hint', title: shuf ? `central (ε, δ) if the ${shuf.n} rows were shuffled (${shuf.bound})` : '',
                        text: shuf ? `none spent; shuffled ε≈${fmt(shuf.epsilon)}` : 'none spent (post-processing)' });
  }
  return el('span', { class: 'hint', text: 'none (public)' });
}

async function renderDatasets() {
  state.datasets = await listAll('/v1/datasets');
  const tbody = $('datasets').querySelector('tbody');
  tbody.replaceChildren();
  $('datasets-empty').hidden = state.datasets.length > 0;
  $('datasets').hidden = state.datasets.length === 0;
  for (const d of state.datasets) {
    const open = el('button', { type: 'button', class: 'link-btn', text: d.name || d.id, title: d.id });
    open.addEventListener('click', () => openDataset(d.id));
    const tr = el('tr', { class: 'pick' + (state.dataset === d.id ? ' selected' : ''), 'data-id': d.id },
                  td('Name', open, el('br'), el('code', { class: 'id', text: d.id })),
                  td('Privacy', privacyText(d)), td('Rows', (d.n ?? 0).toLocaleString('en')),
                  td('Budget', budgetCell(d)));
    tr.addEventListener('click', (ev) => { if (!ev.target.closest('button')) openDataset(d.id); });
    tbody.append(tr);
  }
  fillDatasetSelect();
  drawJobs(); // the job rows name their datasets
  if (state.dataset) {
    if (state.datasets.some((d) => d.id === state.dataset)) showDataset(); else closeDataset();
  }
}

function openDataset(id) {
  state.dataset = id;
  $('dd-confirm').hidden = true; $('dd-error').textContent = '';
  clearErrors($('up-form')); $('up-result').textContent = ''; $('up-file').value = '';
  document.querySelectorAll('#datasets tbody tr').forEach((tr) => tr.classList.toggle('selected', tr.dataset.id === id));
  showDataset();
  $('ds-detail').hidden = false;
  $('ds-detail').scrollIntoView({ block: 'nearest' });
}

function closeDataset() {
  state.dataset = null;
  $('ds-detail').hidden = true;
  document.querySelectorAll('#datasets tbody tr.selected').forEach((tr) => tr.classList.remove('selected'));
}

function showDataset() {
  const d = state.datasets.find((x) => x.id === state.dataset);
  if (!d) return;
  const p = d.privacy || {}, rep = d.privacy_report || {};
  $('dd-name').textContent = d.name;
  const pairs = [['id', el('code', { text: d.id })], ['rows', `${(d.n ?? 0).toLocaleString('en')} (${bytes(d.bytes)})`],
                 ['shape', `[${(d.shape || []).join(', ')}]  (d = ${d.d})`],
                 ['range', `${fmt((d.range || [])[0])} to ${fmt((d.range || [])[1])}`],
                 d.num_classes ? ['classes', String(d.num_classes)] : null,
                 ['privacy', privacyText(d)]];
  if (p.model === 'local' && p.mechanism === 'per_column') {
    pairs.push(['noise', `per column, ε = ${fmt(p.epsilon)} in total (basic composition)`]);
  } else if (p.model === 'local') {
    pairs.push(['noise', `${p.mechanism === 'laplace' ? 'b' : 'σ'} = ${fmt(p.noise_scale)} (minimum ${fmt(rep.min_noise_scale)}), sensitivity ${fmt(p.sensitivity)}`]);
    if (rep.shuffle) pairs.push(['if shuffled', `ε ≈ ${fmt(rep.shuffle.epsilon)} at δ = ${fmt(rep.shuffle.delta)} (n = ${rep.shuffle.n})`]);
  }
  if (p.model === 'central') pairs.push(['budget cap', `ε = ${fmt((p.budget || {}).epsilon)}, δ = ${fmt((p.budget || {}).delta)}`]);
  pairs.push(['created', (d.created_at || '').replace('T', ' ').replace('Z', ' UTC')]);
  facts($('dd-facts'), pairs);
  showSchema(d);
  $('up-hint-model').textContent = p.model === 'central'
    ? ' Values must lie in the declared range.' : ' Upload rows privatized as declared.';
  if (p.model === 'central') renderLedger(d); else $('dd-ledger').hidden = true;
}

// A typed dataset's columns: type, bounds or categories, nullable, label.
function showSchema(d) {
  const box = $('dd-schema-box');
  box.hidden = !Array.isArray(d.columns);
  $('up-hint-plain').hidden = !box.hidden; $('up-hint-typed').hidden = box.hidden;
  if (box.hidden) return;
  const perCol = ((d.privacy || {}).columns || []);
  const rows = d.columns.map((c, i) => {
    let values = c.type === 'categorical' ? c.categories.join(', ')
      : c.type === 'boolean' ? 'true, false' : `${fmt(c.min)} to ${fmt(c.max)}`;
    const ldp = perCol[i];
    if (ldp) values += `  (ε = ${fmt(ldp.epsilon)}, ${ldp.mechanism.replace('_', ' ')})`;
    return el('tr', {}, td('column', c.name + (c.name === d.label ? ' (label)' : '')), td('type', c.type),
              td('values', values), td('missing', c.nullable ? 'allowed' : 'no'));
  });
  $('dd-schema').tBodies[0].replaceChildren(...rows);
}

// A CSV body as a table: a header row, then cells (empty = missing, shown as –).
function csvRows(text) {
  const rows = [];
  let row = [], f = '', q = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (q) {
      if (ch === '"' && text[i + 1] === '"') { f += '"'; i++; }
      else if (ch === '"') q = false;
      else f += ch;
    } else if (ch === '"') q = true;
    else if (ch === ',') { row.push(f); f = ''; }
    else if (ch === '\n') { row.push(f); rows.push(row); row = []; f = ''; }
    else if (ch !== '\r') f += ch;
  }
  if (f || row.length) { row.push(f); rows.push(row); }
  return rows;
}

async function loadRows(id) {
  const box = $('jd-rows-box');
  try {
    const res = await api(`/v1/jobs/${id}/samples?n=10&seed=1&format=csv`);
    if (state.selected !== id || !res.ok) { box.hidden = true; return; }
    const [head, ...rows] = csvRows(await res.text());
    $('jd-rows').replaceChildren(
      el('thead', {}, el('tr', {}, ...head.map((h) => el('th', { text: h })))),
      el('tbody', {}, ...rows.map((r) => el('tr', {}, ...r.map((v, j) =>
        el('td', { text: v === '' ? '–' : v, class: v === '' ? 'missing' : '', 'data-label': head[j] }))))));
    box.hidden = false;
  } catch (e) { box.hidden = true; }
}

async function renderLedger(d) {
  $('dd-ledger').hidden = false;
  let b;
  try { b = await apiJSON(`/v1/datasets/${d.id}/budget`); } catch (e) { $('dd-ledger-sum').textContent = e.message; return; }
  if (state.dataset !== d.id) return;
  const cap = b.cap || {};
  $('dd-ledger-sum').replaceChildren(gauge(b.spent_epsilon || 0, cap.epsilon || 0),
    el('span', { class: 'ledger-left', text: `${fmt(b.remaining_epsilon)} of ε ${fmt(cap.epsilon)} left (at δ = ${fmt(cap.delta)})` }));
  const entries = b.entries || [];
  $('ledger').hidden = entries.length === 0;
  $('ledger-empty').hidden = entries.length > 0;
  $('ledger').querySelector('tbody').replaceChildren(...entries.map((e) => el('tr', { 'data-job': e.job_id },
    td('Job', el('code', { text: e.job_id })), td('ε', fmt(e.epsilon)), td('δ', fmt(e.delta)),
    td('Noise σ', fmt(e.noise_multiplier)), td('Sampling q', fmt(e.sampling_rate)), td('Steps', e.steps ?? '–'),
    td('State', e.refunded ? 'refunded' : 'charged'))));
  $('dd-accountant').textContent = b.accountant ? `Accountant: ${b.accountant}. Entries compose; the gauge shows the total.` : '';
}

function fillDatasetSelect() {
  const sel = $('jf-dataset'), keep = sel.value;
  sel.replaceChildren(...state.datasets.map((d) => el('option', { value: d.id,
    text: `${d.name} · ${(d.privacy || {}).model} · ${(d.n ?? 0).toLocaleString('en')} rows` })));
  if (state.datasets.some((d) => d.id === keep)) sel.value = keep;
  renderMethods();
}

// -- create

function modelChoice() { return document.querySelector('input[name=df-model]:checked').value; }

function syncModelFields() {
  const m = modelChoice();
  $('df-local').hidden = m !== 'local';
  $('df-central').hidden = m !== 'central';
  $('df-delta-wrap').hidden = $('df-mech').value !== 'gaussian';
}

function toggleCreate(show) {
  $('ds-form').hidden = !show;
  $('ds-new-toggle').setAttribute('aria-expanded', String(show));
  $('ds-new-toggle').hidden = show;
  if (show) { syncModelFields(); $('df-name').focus(); }
}

function numField(id) { const v = $(id).value.trim(); return v === '' ? undefined : Number(v); }

function datasetBody() {
  const shape = $('df-shape').value.trim();
  const body = { name: $('df-name').value.trim(),
                 shape: shape ? shape.split(/[\s,x×]+/).filter(Boolean).map(Number) : [],
                 range: [numField('df-lo'), numField('df-hi')] };
  const nc = numField('df-classes');
  if (nc !== undefined) body.num_classes = nc;
  const m = modelChoice();
  if (m === 'local') {
    body.privacy = { model: 'local', mechanism: $('df-mech').value, epsilon: numField('df-eps'),
                     sensitivity: numField('df-sens'), noise_scale: numField('df-noise') };
    if (body.privacy.mechanism === 'gaussian') body.privacy.delta = numField('df-delta');
  } else if (m === 'central') {
    body.privacy = { model: 'central', budget: { epsilon: numField('df-beps'), delta: numField('df-bdelta') } };
  } else body.privacy = { model: 'public' };
  return body;
}

// Fields the browser can check before asking the server (which checks everything again).
function localCheck(body) {
  const errors = [];
  if (!body.name) errors.push({ field: 'name', message: 'give the dataset a name' });
  if (!body.shape.length || body.shape.some((x) => !Number.isInteger(x) || x < 1))
    errors.push({ field: 'shape', message: 'a width like 2, or c,h,w like 1,28,28' });
  if (body.range.some((x) => x === undefined || !Number.isFinite(x))) errors.push({ field: 'range', message: 'both ends are needed' });
  else if (!(body.range[0] < body.range[1])) errors.push({ field: 'range', message: 'low must be below high' });
  const p = body.privacy;
  for (const [k, v] of Object.entries(p.model === 'central' ? p.budget : p))
    if (v === undefined) errors.push({ field: (p.model === 'central' ? 'privacy.budget.' : 'privacy.') + k, message: 'required' });
  return errors;
}

$('ds-new-toggle').addEventListener('click', () => toggleCreate(true));
$('df-cancel').addEventListener('click', () => { clearErrors($('ds-form')); toggleCreate(false); });
document.querySelectorAll('input[name=df-model]').forEach((r) => r.addEventListener('change', syncModelFields));
$('df-mech').addEventListener('change', syncModelFields);
$('df-decl').addEventListener('change', async () => {
  const f = $('df-decl').files[0];
  if (!f) return;
  clearErrors($('ds-form'));
  try {
    const d = JSON.parse(await f.text());
    if (!d.mechanism || !d.epsilon) throw new Error('no mechanism or epsilon in it');
    $('df-mech').value = d.mechanism;
    $('df-eps').value = d.epsilon; $('df-delta').value = d.delta ?? '';
    $('df-sens').value = d.sensitivity ?? ''; $('df-noise').value = d.noise_scale ?? '';
    if (d.cols && !$('df-shape').value) $('df-shape').value = String(d.cols);
    syncModelFields();
  } catch (e) {
    showErrors($('ds-form'), { body: { errors: [{ field: 'privacy.mechanism', message: `not a declaration: ${e.message}` }] } });
  }
});

$('ds-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const form = $('ds-form'), body = datasetBody();
  const errors = localCheck(body);
  if (errors.length) { showErrors(form, { body: { errors } }); return; }
  clearErrors(form);
  try {
    const d = await apiJSON('/v1/datasets', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    form.reset(); toggleCreate(false);
    await renderDatasets();
    openDataset(d.id);
    $('up-file').focus();
  } catch (e) { if (e.message !== 'unauthorized') showErrors(form, e); }
});

// -- upload

const UPLOAD_TYPES = { csv: 'text/csv', npy: 'application/x-npy', json: 'application/json', idx: 'application/x-idx', gz: 'application/x-idx',
                       ndjson: 'application/x-ndjson', jsonl: 'application/x-ndjson' };

$('up-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const form = $('up-form'), f = $('up-file').files[0], id = state.dataset;
  clearErrors(form); $('up-result').textContent = '';
  if (!f) { showErrors(form, { body: { errors: [{ field: 'rows', message: 'choose a file first' }] } }); return; }
  const ext = (f.name.match(/\.([a-z0-9]+)$/i) || [])[1]?.toLowerCase();
  const type = UPLOAD_TYPES[ext] || (/ubyte/.test(f.name) ? 'application/x-idx' : null);
  if (!type) { showErrors(form, { body: { errors: [{ field: 'rows', message: 'use a .csv, .npy, .json or .idx file' }] } }); return; }
  $('up-submit').disabled = true;
  $('up-result').textContent = `Uploading ${f.name} (${bytes(f.size)})…`;
  try {
    const r = await apiJSON(`/v1/datasets/${id}/rows`, { method: 'POST', headers: { 'Content-Type': type }, body: f });
    $('up-result').textContent = `Added ${r.rows_added.toLocaleString('en')} rows from ${f.name}; the dataset now has ${r.n.toLocaleString('en')}.`;
    $('up-file').value = '';
    await renderDatasets();
  } catch (e) { $('up-result').textContent = ''; if (e.message !== 'unauthorized') showErrors(form, e); }
  $('up-submit').disabled = false;
});

// -- delete (confirmed inline; the server's refusal is shown as it says it)

$('dd-delete').addEventListener('click', () => {
  const d = state.datasets.find((x) => x.id === state.dataset);
  if (!d) return;
  const jobs = state.jobs.filter((j) => j.dataset_id === d.id).length;
  $('dd-confirm-text').textContent = `Delete “${d.name}” and its ${(d.n ?? 0).toLocaleString('en')} rows? This cannot be undone.` +
    (jobs ? ` ${jobs} job${jobs > 1 ? 's were' : ' was'} trained on it.` : '') +
    ((d.privacy || {}).model === 'central' ? ' Its privacy ledger goes with it.' : '');
  $('dd-confirm').hidden = false; $('dd-error').textContent = '';
  $('dd-confirm-no').focus();
});
$('dd-confirm-no').addEventListener('click', () => { $('dd-confirm').hidden = true; });
$('dd-confirm-yes').addEventListener('click', async () => {
  const id = state.dataset;
  $('dd-confirm').hidden = true;
  try {
    await apiJSON(`/v1/datasets/${id}`, { method: 'DELETE' });
    closeDataset();
    await Promise.all([renderDatasets(), renderJobs()]);
  } catch (e) { if (e.message !== 'unauthorized') $('dd-error').textContent = `Not deleted: ${e.message}`; }
});
$('dd-close').addEventListener('click', closeDataset);
$('dd-newjob').addEventListener('click', () => {
  $('jf-dataset').value = state.dataset; renderMethods();
  $('job-card').scrollIntoView({ behavior: 'smooth' }); $('jf-method').focus({ preventScroll: true });
});

// ---- jobs -------------------------------------------------------------------------

function progressText(j) {
  const p = j.progress || {};
  return p.total_steps ? `${p.step || 0} / ${p.total_steps}` : '–';
}

function datasetName(id) { const d = state.datasets.find((x) => x.id === id); return d ? d.name : null; }

async function renderJobs() {
  // The light list: no loss history; only the open job fetches its own.
  const before = new Map(state.jobs.map((j) => [j.id, j.status]));
  state.jobs = await listAll('/v1/jobs?history=false');
  drawJobs();
  // A job that just finished changed a ledger or a snapshot: refresh what shows them.
  const changed = state.jobs.some((j) => before.has(j.id) && before.get(j.id) !== j.status);
  if (changed) renderDatasets().catch(() => {});
  return state.jobs;
}

// "2026-11-28T02:47:13Z" as a short local time (the date only when not today).
function shortTime(iso) {
  if (!iso) return '–';
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return '–';
  const now = new Date(), hm = t.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  return t.toDateString() === now.toDateString() ? hm : `${t.toLocaleDateString([], { month: 'short', day: 'numeric' })} ${hm}`;
}

// How long a job ran (started → finished, or → now while it runs).
function ranFor(j) {
  if (!j.started_at) return '–';
  const a = Date.parse(j.started_at), b = j.finished_at ? Date.parse(j.finished_at) : Date.now();
  if (!Number.isFinite(a) || !Number.isFinite(b)) return '–';
  const s = Math.max(0, Math.round((b - a) / 1000));
  return s < 60 ? `${s} s` : s < 3600 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

// The dataset filter lists the datasets that have jobs (deleted ones by id).
function fillJobFilters() {
  const sel = $('jl-dataset'), keep = sel.value;
  const ids = [...new Set(state.jobs.map((j) => j.dataset_id))];
  sel.replaceChildren(el('option', { value: '', text: 'all' }),
    ...ids.map((id) => el('option', { value: id, text: datasetName(id) || `${id} (deleted)` })));
  if (ids.includes(keep)) sel.value = keep;
}

function drawJobs() {
  const tbody = $('jobs').querySelector('tbody');
  tbody.replaceChildren();
  fillJobFilters();
  const fs = $('jl-status').value, fd = $('jl-dataset').value;
  const shown = state.jobs.filter((j) => (!fs || j.status === fs) && (!fd || j.dataset_id === fd));
  $('jobs-empty').hidden = shown.length > 0;
  $('jobs-empty').textContent = state.jobs.length ? 'No job matches these filters.' : 'No jobs yet.';
  $('jobs').hidden = shown.length === 0;
  $('jobs-filters').hidden = state.jobs.length === 0;
  $('jl-count').textContent = fs || fd ? `${shown.length} of ${state.jobs.length} jobs` : '';
  for (const j of [...shown].reverse()) { // newest first
    const p = j.progress || {};
    const frac = p.total_steps ? Math.min(1, (p.step || 0) / p.total_steps) : 0;
    const name = datasetName(j.dataset_id);
    const tr = el('tr', { class: 'pick' + (state.selected === j.id ? ' selected' : ''), 'data-id': j.id, tabindex: '0' },
                  td('Job', el('code', { text: j.id })), td('Method', j.method),
                  td('Dataset', name ? name : el('span', { class: 'hint', text: `${j.dataset_id} (deleted)` })),
                  td('Status', el('span', { class: 'badge ' + j.status, text: j.status }),
                     (j.warnings || []).length ? el('span', { class: 'warn-dot', title: j.warnings.join('\n'), text: ' ⚠' }) : null),
                  td('Progress', el('span', { class: 'mini-bar' }, el('span', { style: `width:${(100 * frac).toFixed(0)}%` })),
                     ' ' + progressText(j)),
                  td('ε spent', fmt(p.epsilon_spent ?? 0)),
                  td('Created', el('time', { datetime: j.created_at || '', title: j.created_at || '', text: shortTime(j.created_at) })),
                  td('Ran', ranFor(j)));
    tr.addEventListener('click', () => selectJob(j.id));
    tr.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') selectJob(j.id); });
    tbody.append(tr);
  }
}

function schedulePoll() {
  clearTimeout(state.pollTimer);
  const busy = state.jobs.some((j) => j.status === 'queued' || j.status === 'running');
  state.pollTimer = setTimeout(async () => {
    if (state.token && !$('app').hidden && !document.hidden) await renderJobs().catch(() => {});
    schedulePoll();
  }, busy ? POLL_BUSY_MS : POLL_IDLE_MS);
}

// Canvas charts sized to their box (crisp on HiDPI), with labelled min/max.
function drawCurve(canvas, points, key, color, what, yLabel) {
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(200, canvas.clientWidth || 360), h = Number(canvas.getAttribute('height')) || 150;
  if (canvas.width !== Math.round(w * dpr)) { canvas.width = Math.round(w * dpr); canvas.style.height = h + 'px'; }
  canvas.height = Math.round(h * dpr);
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  const left = 66, right = 10, top = 8, bottom = 22;
  ctx.font = '11px system-ui, sans-serif'; ctx.fillStyle = '#5b6475'; ctx.strokeStyle = '#dde1e7'; ctx.lineWidth = 1;
  ctx.strokeRect(left + 0.5, top + 0.5, w - left - right, h - top - bottom);
  // The y axis says what it measures, written up its left edge.
  ctx.save(); ctx.translate(12, top + (h - top - bottom) / 2); ctx.rotate(-Math.PI / 2);
  ctx.textAlign = 'center'; ctx.fillText(yLabel || what, 0, 0); ctx.restore();
  canvas.dataset.ylabel = yLabel || what;
  const pts = points.filter((p) => Number.isFinite(p[key]) && Number.isFinite(p.step));
  if (pts.length < 2) { ctx.fillText(pts.length ? `${what}: ${fmt(pts[0][key])}` : 'waiting for progress…', left + 8, h / 2); return; }
  const xs = pts.map((p) => p.step), ys = pts.map((p) => p[key]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs);
  let y0 = Math.min(...ys), y1 = Math.max(...ys);
  if (y1 - y0 < 1e-12) { y0 -= 0.5; y1 += 0.5; }
  const X = (x) => left + ((x - x0) / (x1 - x0 || 1)) * (w - left - right);
  const Y = (y) => top + (1 - (y - y0) / (y1 - y0)) * (h - top - bottom);
  ctx.textAlign = 'right';
  for (const v of [y0, (y0 + y1) / 2, y1]) {
    ctx.strokeStyle = '#eef0f3'; ctx.beginPath(); ctx.moveTo(left, Y(v)); ctx.lineTo(w - right, Y(v)); ctx.stroke();
    ctx.fillText(fmt(v), left - 4, Math.min(h - bottom, Math.max(top + 8, Y(v) + 4)));
  }
  ctx.textAlign = 'left'; ctx.fillText(`step ${x0}`, left, h - 6);
  ctx.textAlign = 'right'; ctx.fillText(String(x1), w - right, h - 6);
  ctx.strokeStyle = color; ctx.lineWidth = 1.6; ctx.beginPath();
  pts.forEach((p, i) => (i ? ctx.lineTo(X(p.step), Y(p[key])) : ctx.moveTo(X(p.step), Y(p[key]))));
  ctx.stroke();
}

function drawCharts() {
  drawCurve($('jd-loss'), state.history, 'loss', '#2f6fdd', 'loss', 'training loss');
  drawCurve($('jd-eps'), state.history, 'epsilon_spent', '#c0392b', 'ε', 'ε used so far');
}

function showJob(j) {
  if (j.id !== state.selected) return;
  $('jd-id').textContent = j.id;
  const st = $('jd-status'); st.textContent = j.status; st.className = 'badge ' + j.status;
  const p = j.progress || {}, pr = j.privacy || {};
  const name = datasetName(j.dataset_id);
  const rows = [['method', j.method], ['dataset', name ? `${name} (${j.dataset_id})` : `${j.dataset_id} (deleted)`],
                ['step', progressText(j)], ['loss', fmt(p.loss, 4)],
                ['ε spent', pr.charges ? `${fmt(p.epsilon_spent ?? 0)} of ${fmt(pr.epsilon)} planned at δ = ${fmt(pr.delta)}`
                                       : 'none (post-processing of local data)'],
                ['speed', p.steps_per_second ? `${fmt(p.steps_per_second)} steps/s` : '–'],
                ['ETA', Number.isFinite(p.eta_seconds) && j.status === 'running' ? `${Math.round(p.eta_seconds)} s` : '–'],
                ['checkpoints', String((j.checkpoints || []).length)]];
  if (pr.shuffle_epsilon !== undefined && pr.shuffle_epsilon !== null)
    rows.push(['if shuffled', `ε≈${fmt(pr.shuffle_epsilon)}, δ=${fmt(pr.shuffle_delta)} (n=${pr.shuffle_n})`]);
  facts($('jd-facts'), rows);
  $('jd-bar').style.width = p.total_steps ? `${(100 * (p.step || 0)) / p.total_steps}%` : '0';
  $('jd-error').textContent = j.error || '';
  $('jd-cancel').hidden = !(j.status === 'queued' || j.status === 'running');
  // The server's warnings (loss rising at the end, samples outside the range).
  const warns = j.warnings || [];
  $('jd-warnings').hidden = warns.length === 0;
  $('jd-warnings').replaceChildren(...warns.map((w) => el('li', { text: typeof w === 'string' ? w : (w.message || JSON.stringify(w)) })));
  if (Array.isArray(j.history)) state.history = j.history.slice();
  else if (p.step !== undefined && !state.history.some((h) => h.step === p.step))
    state.history.push({ step: p.step, loss: p.loss, epsilon_spent: p.epsilon_spent ?? 0 });
  // Local data spends nothing: an ε curve would be a flat zero.
  const charges = pr.charges !== false;
  $('jd-eps').hidden = !charges; $('jd-eps-title').hidden = !charges; $('jd-eps-note').hidden = !charges;
  $('jd-eps-note').textContent = charges
    ? `The ledger charged the whole plan (ε = ${fmt(pr.epsilon)} at δ = ${fmt(pr.delta)}) before the job read a row; ` +
      'the curve shows how much of it the steps so far have used. A job that stops early is not refunded ' +
      '(a queued job that is cancelled is).'
    : '';
  drawCharts();
}

async function loadSamples(id) {
  const img = $('jd-samples'), note = $('jd-samples-note');
  try {
    const res = await api(`/v1/jobs/${id}/samples?n=500&seed=1&format=png&frame=data`);
    if (state.selected !== id) return;
    if (!res.ok) {
      const e = await problemOf(res);
      img.hidden = true;
      note.textContent = res.status === 409 ? 'No snapshot yet: samples appear after the first checkpoint.' : e.message;
      return;
    }
    const url = URL.createObjectURL(await res.blob());
    img.onload = () => URL.revokeObjectURL(url);
    img.src = url; img.hidden = false;
    note.textContent = state.typed
      ? 'A histogram per column of 500 samples from the latest snapshot (seed 1).'
      : '500 samples from the latest snapshot (seed 1).';
    if (state.typed) loadRows(id);
  } catch (e) { note.textContent = e.message; }
}

function stopStream() {
  if (state.stream) { state.stream.abort(); state.stream = null; }
  if (state.imgTimer) { clearInterval(state.imgTimer); state.imgTimer = null; }
}

// Server-Sent Events over fetch: EventSource can send neither the
// Authorization header nor, then, resume. The stream is followed until the job
// ends. When it drops (a server restart, a proxy's timeout, a replica
// draining) the page reconnects with Last-Event-ID, the id of the last event it
// showed, so the server sends only later states: none shown twice, none after
// it skipped. A server that cannot be reached is retried, 1 s then up to 10 s
// apart, while the job stays open on the page.
const FINISHED = ['succeeded', 'failed', 'cancelled'];
async function follow(id) {
  const ctrl = new AbortController();
  state.stream = ctrl;
  let lastId = '', pause = 1000, ended = false;
  const live = () => state.stream === ctrl && state.selected === id && !ctrl.signal.aborted;
  while (!ended && live()) {
    let got = 0;
    try {
      const headers = { Accept: 'text/event-stream' };
      if (lastId) headers['Last-Event-ID'] = lastId;
      const res = await api(`/v1/jobs/${id}/events`, { signal: ctrl.signal, headers });
      if (!res.ok && res.status < 500) return; // gone, or not ours: nothing to follow
      if (res.ok && res.body) {
        const reader = res.body.getReader(), dec = new TextDecoder();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          let cut;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, cut); buf = buf.slice(cut + 2);
            const lines = block.split('\n');
            const field = (f) => lines.filter((l) => l.startsWith(f + ':')).map((l) => l.slice(f.length + 1).replace(/^ /, ''));
            const data = field('data').join('\n');
            if (!data) continue; // keep-alive comment
            let j;
            try { j = JSON.parse(data); } catch (_) { continue; }
            showJob(j);
            got++;
            const eid = field('id').pop();
            if (eid) lastId = eid; // seen in full: a resume starts after it
            if (field('event').pop() === 'done' || FINISHED.includes(j.status)) ended = true;
          }
        }
      }
    } catch (e) {
      if (e.name === 'AbortError') return;
      if (e.message === 'unauthorized') return;
    }
    if (ended || !live()) break;
    $('jd-error').textContent = got ? '' : 'The event stream was cut: reconnecting…';
    pause = got ? 1000 : Math.min(pause * 2, 10000);
    await new Promise((r) => setTimeout(r, pause));
  }
  if (live()) {
    $('jd-error').textContent = '';
    const j = await apiJSON(`/v1/jobs/${id}`);
    showJob(j); loadSamples(id); renderJobs().then(schedulePoll).catch(() => {});
    if (state.imgTimer) { clearInterval(state.imgTimer); state.imgTimer = null; }
  }
}

async function selectJob(id) {
  stopStream();
  state.selected = id;
  state.history = [];
  $('job-detail').hidden = false;
  clearErrors($('dl-form')); $('dl-result').textContent = '';
  $('jd-samples').hidden = true; $('jd-samples-note').textContent = 'loading samples…';
  $('jd-warnings').hidden = true; $('jd-error').textContent = ''; $('jd-confirm').hidden = true; $('jd-delete-error').textContent = '';
  document.querySelectorAll('#jobs tbody tr').forEach((tr) => tr.classList.toggle('selected', tr.dataset.id === id));
  $('jd-rows-box').hidden = true;
  let j;
  try { j = await apiJSON(`/v1/jobs/${id}`); } catch (e) { $('jd-error').textContent = e.message; return; }
  state.typed = !!(j.spec && j.spec.table); // a typed table: histograms and rows, not a scatter
  showJob(j);
  $('job-detail').scrollIntoView({ block: 'nearest' });
  loadSamples(id);
  loadReports(id, j);
  if (j.status === 'running' || j.status === 'queued') {
    follow(id);
    state.imgTimer = setInterval(() => loadSamples(id), 5000);
  }
}

$('jd-close').addEventListener('click', () => {
  stopStream(); state.selected = null; $('job-detail').hidden = true;
  document.querySelectorAll('#jobs tbody tr.selected').forEach((tr) => tr.classList.remove('selected'));
});
$('jd-cancel').addEventListener('click', async () => {
  if (!state.selected) return;
  try { await apiJSON(`/v1/jobs/${state.selected}/cancel`, { method: 'POST' }); } catch (e) { $('jd-error').textContent = e.message; }
  selectJob(state.selected);
  renderJobs().catch(() => {});
});

// -- delete a job (confirmed inline; a running job is refused by the server,
// whose message is shown as it says it). Its ledger entry stays.
$('jd-delete').addEventListener('click', () => {
  const j = state.jobs.find((x) => x.id === state.selected);
  if (!state.selected) return;
  const charged = j && (j.privacy || {}).charges;
  $('jd-confirm-text').textContent = `Delete job ${state.selected}${j ? ` (${j.method}, ${j.status})` : ''}, its checkpoints and history? ` +
    'Its samples can no longer be downloaded. This cannot be undone.' +
    (charged ? ' Its privacy ledger entry stays: the dataset\'s budget does not change.' : '');
  $('jd-confirm').hidden = false; $('jd-delete-error').textContent = '';
  $('jd-confirm-no').focus();
});
$('jd-confirm-no').addEventListener('click', () => { $('jd-confirm').hidden = true; });
$('jd-confirm-yes').addEventListener('click', async () => {
  const id = state.selected;
  $('jd-confirm').hidden = true;
  if (!id) return;
  try {
    await apiJSON(`/v1/jobs/${id}`, { method: 'DELETE' });
  } catch (e) {
    if (e.message !== 'unauthorized') $('jd-delete-error').textContent = `Not deleted: ${e.message}`;
    return;
  }
  $('jd-close').click();
  await Promise.all([renderJobs(), renderDatasets()]).catch(() => {});
});
window.addEventListener('resize', () => { if (state.selected) drawCharts(); });

// -- sample downloads (fetched with the token, then saved from a blob)

const EXT = { csv: 'csv', npy: 'npy', png: 'png', json: 'json' };
document.querySelectorAll('#dl-form [data-format]').forEach((b) => b.addEventListener('click', async () => {
  const form = $('dl-form'), fmtName = b.dataset.format, id = state.selected;
  clearErrors(form); $('dl-result').textContent = '';
  const q = new URLSearchParams({ format: fmtName });
  const n = $('dl-n').value.trim(), seed = $('dl-seed').value.trim();
  if (n) q.set('n', n);
  if (seed) q.set('seed', seed);
  if (fmtName === 'png') q.set('frame', $('dl-frame').value);
  try {
    const res = await api(`/v1/jobs/${id}/samples?${q}`);
    if (!res.ok) throw await problemOf(res);
    const blob = await res.blob();
    const url = URL.createObjectURL(blob);
    const name = `${id}-samples${seed ? '-seed' + seed : ''}.${EXT[fmtName]}`;
    const a = el('a', { href: url, download: name });
    document.body.append(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    $('dl-result').textContent = `Saved ${name} (${bytes(blob.size)}).`;
  } catch (e) { if (e.message !== 'unauthorized') showErrors(form, e); }
}));

// ---- new job: methods that take the dataset's privacy model --------------------

// The basic parameters, by name in the catalogue; every other one is advanced.
const BASIC = [
  ['train.steps', 'Steps'], ['flow.steps', 'Flow steps'], ['train.batch_size', 'Batch size'],
  ['flow.particles', 'Particles'], ['privacy.epsilon', 'Target ε'], ['privacy.delta', 'Target δ'],
];

// What an empty field without a table default means, said truly (or nothing):
// the server fills these from the dataset (defaults.h) or the job's target.
function absentText(p) {
  const d = currentDataset(), priv = (d && d.privacy) || {}, cap = priv.budget || {};
  if (p.name === 'privacy.delta') return priv.model === 'central' && cap.delta ? `dataset's cap: ${fmt(cap.delta)}` : '';
  if (p.name === 'privacy.epsilon') return priv.model === 'central' ? 'required, e.g. 1' : '';
  if (p.name === 'privacy.noise_multiplier') return 'from the target ε';
  if (p.name === 'seed') return 'random';
  if (p.name === 'model.latent_dim') return 'from the data';
  return '';
}

function paramInput(p, label) {
  const id = 'p-' + p.name.replace(/\W/g, '-');
  let input;
  const common = { id, 'data-name': p.name, 'data-field': p.name, 'data-type': p.type };
  if (p.enum) {
    input = el('select', common);
    if (p.default === undefined) input.append(el('option', { value: '', text: '(not set: the method decides)' }));
    for (const v of p.enum) input.append(el('option', { value: v, text: v + (v === p.default ? ' (default)' : '') }));
    if (p.default !== undefined) input.value = String(p.default);
    input.dataset.initial = input.value;
  } else if (p.type === 'boolean') {
    input = el('input', Object.assign({ type: 'checkbox' }, common));
    input.checked = p.default === true;
    input.dataset.initial = String(input.checked);
  } else {
    const numeric = p.type === 'integer' || p.type === 'number';
    input = el('input', Object.assign({ type: numeric ? 'number' : 'text', step: p.type === 'integer' ? '1' : 'any',
      inputmode: numeric ? 'decimal' : undefined, min: p.minimum, max: p.maximum,
      placeholder: p.default !== undefined ? (Array.isArray(p.default) ? p.default.join(', ') : String(p.default)) : absentText(p) }, common));
    input.dataset.initial = '';
  }
  const short = p.name.includes('.') ? p.name.slice(p.name.indexOf('.') + 1) : p.name;
  return el('label', { class: 'f', for: id, title: p.description || '' },
            el('span', { class: 'lbl' }, label || short, p.required ? ' *' : ''), input,
            p.description ? el('small', { text: p.description }) : null);
}

function currentDataset() { return state.datasets.find((d) => d.id === $('jf-dataset').value); }

function renderMethods() {
  const d = currentDataset(), model = d ? (d.privacy || {}).model : null;
  const ok = state.algorithms.filter((a) => (a.accepts || []).includes(model));
  const sel = $('jf-method'), keep = sel.value;
  // A refresh of the dataset list must not wipe what the user typed in the form.
  const same = [...sel.options].map((o) => o.value).join() === ok.map((a) => a.name).join();
  if (same && d && sel.dataset.for === model && $('jf-basic').childElementCount) {
    const dl = document.getElementById('p-privacy-delta'); // another dataset, another cap
    if (dl) dl.placeholder = absentText({ name: 'privacy.delta' });
    return;
  }
  sel.dataset.for = model || '';
  sel.replaceChildren(...ok.map((a) => el('option', { value: a.name, text: a.name })));
  if (ok.some((a) => a.name === keep)) sel.value = keep;
  const none = !d || ok.length === 0;
  $('jf-dry').disabled = none; $('jf-start').disabled = none;
  if (!d) $('jf-method-summary').textContent = 'Create a dataset first.';
  else if (!ok.length) $('jf-method-summary').textContent =
    `No method trains on ${model} datasets${model === 'public' ? ' (a public dataset serves as public_dataset_id of a central job)' : ''}.`;
  renderParams();
}

function renderParams() {
  const alg = state.algorithms.find((a) => a.name === $('jf-method').value);
  $('jf-plan').hidden = true;
  clearErrors($('job-form'));
  if (!alg) { $('jf-basic').replaceChildren(); $('jf-params').replaceChildren(); $('jf-advanced').hidden = true; return; }
  $('jf-advanced').hidden = false;
  const d = currentDataset();
  $('jf-method-summary').textContent = `${alg.summary || ''} Takes ${(alg.accepts || []).join(', ')} data.` +
    ((d.privacy || {}).model === 'central' ? ` Give a target ε (δ defaults to the dataset's cap, ${fmt(((d.privacy || {}).budget || {}).delta)}), or a noise multiplier (advanced); the ledger is charged when the job starts.` : '');
  const params = alg.parameters || [];
  const basic = BASIC.map(([n, label]) => [params.find((p) => p.name === n), label]).filter(([p]) => p);
  $('jf-basic').replaceChildren(...basic.map(([p, label]) => paramInput(p, label)));
  const adv = params.filter((p) => !BASIC.some(([n]) => n === p.name));
  $('jf-adv-count').textContent = `(${adv.length})`;
  const groups = new Map();
  for (const p of adv) {
    const g = p.name.includes('.') ? p.name.split('.')[0] : 'general';
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g).push(p);
  }
  $('jf-params').replaceChildren(...[...groups].map(([g, ps]) =>
    el('fieldset', { class: 'group' }, el('legend', { text: g }), el('div', { class: 'fields' }, ...ps.map((p) => paramInput(p))))));
}

function setPath(obj, path, v) {
  const keys = path.split('.');
  let o = obj;
  keys.slice(0, -1).forEach((k) => { o = o[k] = o[k] || {}; });
  o[keys[keys.length - 1]] = v;
}

// Only what the user set is sent: the server resolves the rest (and says so in the dry run).
function collectSpec() {
  const spec = { dataset_id: $('jf-dataset').value, method: $('jf-method').value };
  for (const input of $('job-form').querySelectorAll('[data-name]')) {
    const name = input.dataset.name, type = input.dataset.type;
    if (type === 'boolean') { if (String(input.checked) !== input.dataset.initial) setPath(spec, name, input.checked); continue; }
    const raw = input.value.trim();
    if (raw === '' || (input.tagName === 'SELECT' && raw === input.dataset.initial)) continue;
    let v = raw;
    if (type === 'integer' || type === 'number') v = Number(raw);
    else if (type.startsWith('array')) v = raw.replace(/[[\]]/g, '').split(/[\s,]+/).filter(Boolean).map(Number);
    else if (type === 'number|string') v = Number.isFinite(Number(raw)) ? Number(raw) : raw;
    setPath(spec, name, v);
  }
  return spec;
}

function planSummary(r) {
  const p = r.plan || {}, b = r.budget, spec = r.spec || {};
  const rows = [];
  if (p.charges) {
    rows.push(['privacy', `ε = ${fmt(p.epsilon)} at δ = ${fmt(p.delta)}${p.approximate ? ' (approximate)' : ''}`]);
    rows.push(['noise', `multiplier σ = ${fmt(p.noise_multiplier)}, sampling rate q = ${fmt(p.sampling_rate)}`]);
    rows.push(['mechanism', `${p.mechanism.replace(/_/g, ' ')} (${p.neighbouring.replace('_', '/')} neighbours), ${p.accountant.replace('_', ' ')} accountant`]);
  } else {
    rows.push(['privacy', 'charges nothing: training on locally privatized rows is post-processing']);
    if (p.shuffle_epsilon !== undefined && p.shuffle_epsilon !== null)
      rows.push(['if shuffled', `ε ≈ ${fmt(p.shuffle_epsilon)} at δ = ${fmt(p.shuffle_delta)}`]);
  }
  rows.push(['steps', `${(p.steps ?? 0).toLocaleString('en')}` + ((spec.train || {}).batch_size ? `, batch ${spec.train.batch_size}` : '')]);
  rows.push(['memory', `about ${bytes(r.memory_bytes)}`]);
  if (b) {
    const after = (b.total_epsilon ?? b.requested_epsilon);
    rows.push(['budget', el('span', {}, `ledger total after this job: ε\u00a0${fmt(after)} of ${fmt(b.cap_epsilon)} (now ${fmt(b.spent_epsilon)} spent) `,
      el('span', { class: 'badge ' + (b.admissible ? 'succeeded' : 'failed'), text: b.admissible ? 'fits' : 'over budget' }))]);
  }
  rows.push(['seed', String(spec.seed ?? '–')]);
  return rows;
}

let submitter = 'start';
document.querySelectorAll('#job-form button[type=submit]').forEach((b) => b.addEventListener('click', () => { submitter = b.value; }));
$('job-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const form = $('job-form'), dry = (ev.submitter ? ev.submitter.value : submitter) === 'dry';
  clearErrors(form); $('jf-plan').hidden = true;
  try {
    const body = await apiJSON('/v1/jobs' + (dry ? '?dry_run=true' : ''), {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(collectSpec()) });
    if (dry) {
      facts($('jf-plan-facts'), planSummary(body));
      $('jf-plan-note').textContent = 'Nothing was charged or queued. Start the job to run this plan.';
      $('jf-plan').hidden = false;
      return;
    }
    await renderJobs();
    schedulePoll();
    if (body.id) selectJob(body.id);
    if ((currentDataset()?.privacy || {}).model === 'central') renderDatasets().catch(() => {});
  } catch (e) { if (e.message !== 'unauthorized') showErrors(form, e); }
});

$('jl-status').addEventListener('change', drawJobs);
$('jl-dataset').addEventListener('change', drawJobs);
$('jf-dataset').addEventListener('change', renderMethods);
$('jf-method').addEventListener('change', renderParams);

async function renderAlgorithms() {
  const body = await apiJSON('/v1/algorithms');
  state.algorithms = body.items || body.algorithms || [];
  renderMethods();
}

async function refreshAll() {
  await Promise.all([renderAlgorithms(), renderJobs()].map((p) => p.catch((e) => console.warn(e))));
  await renderDatasets().catch((e) => console.warn(e));
}

$('login-form').addEventListener('submit', (ev) => { ev.preventDefault(); signIn($('token').value.trim()); });
$('logout').addEventListener('click', () => signOut());

if (state.token) signIn(state.token); else signOut();

// ---- quality reports: list, create, progress, figures ---------------------------

const reports = { job: null, open: null, timer: null, shape: null, names: new Map(), picked: null };
$('rp-against').addEventListener('change', () => { reports.picked = { job: reports.job, id: $('rp-against').value }; });
const reportAgainst = (id) => reports.names.get(id) || datasetName(id) || id;

function reportDistance(r) {
  const d = (r.result || {}).distribution || {}, sw = d.sliced_w2;
  return sw ? `${fmt(sw.synthetic)} (${fmt(sw.noise_floor)})` : '–';
}

async function loadReports(id, job) {
  if (reports.timer) { clearTimeout(reports.timer); reports.timer = null; }
  if (reports.job !== id) { reports.open = null; $('rp-view').hidden = true; clearErrors($('rp-form')); }
  reports.job = id;
  // The picker: datasets of the job dataset's shape (a private one is marked).
  try {
    const all = await listAll('/v1/datasets');
    reports.names = new Map(all.map((d) => [d.id, d.name]));
    const own = all.find((d) => d.id === job.dataset_id);
    if (own) reports.shape = JSON.stringify(own.shape);
    const sel = $('rp-against');
    // What the user picked for this job stays; otherwise a public dataset.
    const keep = reports.picked && reports.picked.job === id ? reports.picked.id : null;
    // Public datasets first: comparing with them costs nothing and anyone may read the result.
    const fit = all.filter((d) => !reports.shape || JSON.stringify(d.shape) === reports.shape);
    const isPub = (d) => (d.privacy || {}).model === 'public';
    fit.sort((a, b) => Number(isPub(b)) - Number(isPub(a)));
    sel.replaceChildren(...fit.map((d) => {
      const m = (d.privacy || {}).model;
      return el('option', { value: d.id, text: m === 'public' ? `${d.name} (public)` : `${d.name} (${m}: admin only, not DP)` });
    }));
    if (keep && fit.some((d) => d.id === keep)) sel.value = keep;
    else if (fit.length) sel.value = (fit.find(isPub) || fit[0]).id;
  } catch (_) { /* the list below still loads */ }
  let items = [];
  try { items = await listAll(`/v1/jobs/${id}/reports`); } catch (e) { return; }
  if (reports.job !== id) return;
  const tbody = $('rp-list').querySelector('tbody');
  tbody.replaceChildren();
  $('rp-list').hidden = items.length === 0; $('rp-empty').hidden = items.length > 0;
  for (const r of [...items].reverse()) {
    const tr = el('tr', { class: 'pick' + (reports.open === r.id ? ' selected' : ''), 'data-id': r.id, tabindex: '0' },
                  td('Report', el('code', { text: r.id })), td('Against', reportAgainst(r.against)),
                  td('Status', el('span', { class: 'badge ' + r.status, text: r.status }),
                     r.status === 'running' ? ` ${Math.round(100 * r.progress)}%` : ''),
                  td('Audience', r.private ? 'tenant' : el('span', { class: 'error', text: 'data owner (not DP)' })));
    tr.addEventListener('click', () => openReport(r.id));
    tr.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') openReport(r.id); });
    tbody.append(tr);
  }
  if (items.some((r) => r.status === 'queued' || r.status === 'running'))
    reports.timer = setTimeout(() => { if (reports.job === id && state.selected === id) loadReports(id, job); }, 1500);
}

async function openReport(rid) {
  const id = reports.job;
  reports.open = rid;
  document.querySelectorAll('#rp-list tbody tr').forEach((tr) => tr.classList.toggle('selected', tr.dataset.id === rid));
  let r;
  try { r = await apiJSON(`/v1/jobs/${id}/reports/${rid}`); } catch (e) { showErrors($('rp-form'), e); return; }
  if (reports.open !== rid) return;
  $('rp-view').hidden = false;
  $('rp-id').textContent = r.id;
  const st = $('rp-status'); st.textContent = r.status; st.className = 'badge ' + r.status;
  $('rp-mark').hidden = r.private !== false;
  $('rp-mark').textContent = r.private === false ? `Not DP - for the data owner: ${r.privacy_note}` : '';
  const res = r.result || {}, m = res.marginals || {}, dist = res.distribution || {}, sk = dist.sinkhorn_divergence;
  const rows = [['against', `${reportAgainst(r.against)} (${r.against_privacy}, ${r.against_n} rows)`],
                ['synthetic rows', `${r.n} (seed ${r.seed}, step ${r.job_step})`],
                ['progress', r.status === 'running' ? `${r.stage || ''} ${Math.round(100 * r.progress)}%` : r.status],
                ['privacy', r.private === false ? 'not differentially private' : r.privacy_note + (r.epsilon ? ` (ε = ${fmt(r.epsilon)})` : '')]];
  if (r.error) rows.push(['error', r.error]);
  if (m.mean_ks !== undefined) rows.push(['per column', `mean KS ${fmt(m.mean_ks)}, max KS ${fmt(m.max_ks)}, mean W1 ${fmt(m.mean_w1)}`]);
  if (res.pairwise) rows.push(['correlations', `mean |difference| ${fmt(res.pairwise.pearson_mean_abs_diff)}`]);
  if (dist.sliced_w2) rows.push(['sliced W2', reportDistance(r)]);
  if (sk) rows.push(['Sinkhorn', `${fmt(sk.synthetic)} (${fmt(sk.noise_floor)})`]);
  if (res.utility) rows.push(['utility', `accuracy trained on synthetic ${fmt(res.utility.train_synthetic_accuracy)}, on real ${fmt(res.utility.train_real_accuracy)}`]);
  if (res.memorisation) rows.push(['memorisation', `${fmt(100 * res.memorisation.share_below)}% of synthetic rows closer than real-to-real's 5th percentile (about 5% expected)`]);
  facts($('rp-facts'), rows);
  const box = $('rp-figures');
  box.replaceChildren();
  for (const name of r.figures || []) {
    const img = el('img', { alt: name, 'data-name': name });
    box.append(img);
    api(`/v1/jobs/${id}/reports/${rid}/figures/${encodeURIComponent(name)}`).then(async (res2) => {
      if (!res2.ok) return;
      const url = URL.createObjectURL(await res2.blob());
      img.onload = () => URL.revokeObjectURL(url);
      img.src = url;
    }).catch(() => {});
  }
  if (r.status === 'queued' || r.status === 'running')
    setTimeout(() => { if (reports.open === rid && reports.job === id) openReport(rid); }, 1000);
}

$('rp-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const form = $('rp-form'), id = reports.job;
  clearErrors(form);
  const body = { against: $('rp-against').value };
  const n = $('rp-n').value.trim(), seed = $('rp-seed').value.trim();
  if (n) body.n = Number(n);
  if (seed) body.seed = Number(seed);
  try {
    const r = await apiJSON(`/v1/jobs/${id}/reports`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    const job = state.jobs.find((j) => j.id === id) || { dataset_id: null };
    await loadReports(id, job);
    openReport(r.id);
  } catch (e) { if (e.message !== 'unauthorized') showErrors(form, e); }
});
