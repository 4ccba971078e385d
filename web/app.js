// privgen dashboard: plain JavaScript, no framework, no external assets.
// Talks to the /v1 API with the bearer token kept in localStorage.
'use strict';

const state = { token: localStorage.getItem('privgen.token') || '', datasets: [], jobs: [],
                algorithms: [], selected: null, stream: null, history: [], imgTimer: null };
const $ = (id) => document.getElementById(id);

async function api(path, opts = {}) {
  const headers = Object.assign({ Authorization: 'Bearer ' + state.token }, opts.headers || {});
  const res = await fetch(path, Object.assign({}, opts, { headers }));
  if (res.status === 401) { signOut('Your token was refused.'); throw new Error('unauthorized'); }
  return res;
}

async function apiJSON(path, opts) {
  const res = await api(path, opts);
  const body = await res.json().catch(() => ({}));
  if (!res.ok) { const e = new Error(body.detail || body.title || res.statusText); e.body = body; throw e; }
  return body;
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v; else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

function fmt(x, digits = 3) {
  if (x === null || x === undefined || Number.isNaN(x)) return '–';
  if (typeof x !== 'number') return String(x);
  return Math.abs(x) >= 1000 ? x.toFixed(0) : x.toPrecision(digits);
}

// ---- sign in / out -------------------------------------------------------

function signOut(message) {
  localStorage.removeItem('privgen.token');
  state.token = '';
  stopStream();
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
}

// ---- datasets --------------------------------------------------------------

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

function gauge(spent, cap) {
  const frac = cap > 0 ? Math.min(1, spent / cap) : 0;
  const g = el('span', { class: 'gauge' + (frac >= 0.999 ? ' full' : frac > 0.8 ? ' high' : ''),
                         role: 'meter', 'aria-valuemin': '0', 'aria-valuemax': String(cap),
                         'aria-valuenow': String(spent), title: `ε ${fmt(spent)} of ${fmt(cap)}` });
  g.append(el('span', { style: `width:${(100 * frac).toFixed(1)}%` }));
  return el('span', {}, g, el('span', { class: 'gauge-label', text: `ε ${fmt(spent)} / ${fmt(cap)}` }));
}

async function renderDatasets() {
  state.datasets = await listAll('/v1/datasets');
  const tbody = $('datasets').querySelector('tbody');
  tbody.replaceChildren();
  $('datasets-empty').hidden = state.datasets.length > 0;
  for (const d of state.datasets) {
    const p = d.privacy || {};
    let priv = p.model || '?', budget = el('span', { class: 'hint', text: '–' });
    if (p.model === 'local') {
      priv = `local ${p.mechanism} (ε=${fmt(p.epsilon)})`;
      const rep = d.privacy_report || {};
      // privacy_report.shuffle: {epsilon, delta, n, bound} or null (bound does not apply).
      const shuf = rep.shuffle;
      budget = el('span', { class: 'hint',
                            title: shuf ? `central (ε, δ) if the ${shuf.n} rows were shuffled (${shuf.bound})` : '',
                            text: shuf ? `no budget spent; shuffled ε≈${fmt(shuf.epsilon)} at δ=${fmt(shuf.delta, 2)}`
                                       : 'no budget: post-processing' });
    } else if (p.model === 'central') {
      budget = el('span', { class: 'hint', text: '…' });
      apiJSON(`/v1/datasets/${d.id}/budget`).then((b) => {
        budget.replaceWith(gauge(b.spent_epsilon || 0, (b.cap || {}).epsilon || 0));
      }).catch(() => { budget.textContent = 'budget unavailable'; });
    }
    const tr = el('tr', {}, el('td', { text: d.name || '' }), el('td', {}, el('code', { text: d.id })),
                  el('td', { text: priv }), el('td', { text: String(d.n ?? d.rows ?? 0) }), el('td', {}, budget));
    tbody.append(tr);
  }
  const sel = $('jf-dataset');
  sel.replaceChildren(...state.datasets.map((d) => el('option', { value: d.id, text: `${d.name} (${(d.privacy || {}).model})` })));
}

// ---- jobs ------------------------------------------------------------------

function progressText(j) {
  const p = j.progress || {};
  return p.total_steps ? `${p.step || 0} / ${p.total_steps}` : '–';
}

async function renderJobs() {
  state.jobs = await listAll('/v1/jobs');
  const tbody = $('jobs').querySelector('tbody');
  tbody.replaceChildren();
  $('jobs-empty').hidden = state.jobs.length > 0;
  for (const j of state.jobs) {
    const tr = el('tr', { class: 'job' + (state.selected === j.id ? ' selected' : ''), 'data-id': j.id },
                  el('td', {}, el('code', { text: j.id })), el('td', { text: j.method }),
                  el('td', {}, el('code', { text: j.dataset_id })),
                  el('td', {}, el('span', { class: 'badge ' + j.status, text: j.status })),
                  el('td', { text: progressText(j) }),
                  el('td', { text: fmt((j.progress || {}).epsilon_spent ?? 0) }));
    tr.addEventListener('click', () => selectJob(j.id));
    tbody.append(tr);
  }
}

function drawCurve(canvas, points, key, color) {
  const ctx = canvas.getContext('2d');
  const w = canvas.width, h = canvas.height, pad = 28;
  ctx.clearRect(0, 0, w, h);
  ctx.font = '10px system-ui'; ctx.fillStyle = '#5b6475'; ctx.strokeStyle = '#dde1e7';
  ctx.strokeRect(pad, 4, w - pad - 4, h - pad);
  const pts = points.filter((p) => Number.isFinite(p[key]));
  if (pts.length < 2) { ctx.fillText('waiting for progress…', pad + 8, h / 2); return; }
  const xs = pts.map((p) => p.step), ys = pts.map((p) => p[key]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs);
  let y0 = Math.min(...ys), y1 = Math.max(...ys);
  if (y1 - y0 < 1e-12) { y0 -= 0.5; y1 += 0.5; }
  const X = (x) => pad + ((x - x0) / (x1 - x0 || 1)) * (w - pad - 6);
  const Y = (y) => 4 + (1 - (y - y0) / (y1 - y0)) * (h - pad - 2);
  ctx.strokeStyle = color; ctx.lineWidth = 1.5; ctx.beginPath();
  pts.forEach((p, i) => (i ? ctx.lineTo(X(p.step), Y(p[key])) : ctx.moveTo(X(p.step), Y(p[key]))));
  ctx.stroke();
  ctx.fillText(fmt(y1), 2, 12); ctx.fillText(fmt(y0), 2, h - pad);
  ctx.fillText(String(x0), pad, h - 10); ctx.fillText(String(x1), w - 40, h - 10);
}

function showJob(j) {
  $('jd-id').textContent = j.id;
  const st = $('jd-status'); st.textContent = j.status; st.className = 'badge ' + j.status;
  const p = j.progress || {}, pr = j.privacy || {};
  const facts = [['method', j.method], ['dataset', j.dataset_id], ['step', progressText(j)],
                 ['loss', fmt(p.loss, 5)], ['ε spent', fmt(p.epsilon_spent ?? pr.epsilon ?? 0)],
                 ['δ', fmt(pr.delta)], ['steps/s', fmt(p.steps_per_second)],
                 ['ETA', p.eta_seconds !== undefined && j.status === 'running' ? `${Math.round(p.eta_seconds)} s` : '–'],
                 ['checkpoints', String((j.checkpoints || []).length)]];
  // Local data: what shuffling the n reports would give (informative only; see README).
  if (pr.shuffle_epsilon !== undefined && pr.shuffle_epsilon !== null)
    facts.push(['if shuffled', `ε≈${fmt(pr.shuffle_epsilon)}, δ=${fmt(pr.shuffle_delta, 2)} (n=${pr.shuffle_n})`]);
  $('jd-facts').replaceChildren(...facts.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: v ?? '–' })]));
  $('jd-bar').style.width = p.total_steps ? `${(100 * (p.step || 0)) / p.total_steps}%` : '0';
  $('jd-error').textContent = j.error || '';
  // The server's warnings (loss rising at the end, samples outside the range).
  const warns = j.warnings || [];
  $('jd-warnings').hidden = warns.length === 0;
  $('jd-warnings').replaceChildren(...warns.map((w) => el('li', { text: w })));
  $('jd-cancel').hidden = !(j.status === 'queued' || j.status === 'running');
  if (p.step !== undefined && !state.history.some((h) => h.step === p.step))
    state.history.push({ step: p.step, loss: p.loss, epsilon_spent: p.epsilon_spent ?? 0 });
  drawCurve($('jd-loss'), state.history, 'loss', '#2f6fdd');
  drawCurve($('jd-eps'), state.history, 'epsilon_spent', '#c0392b');
}

async function loadSamples(id) {
  const img = $('jd-samples');
  try {
    const res = await api(`/v1/jobs/${id}/samples?n=64&seed=1&format=png`);
    if (!res.ok) {
      const b = await res.json().catch(() => ({}));
      $('jd-samples-note').textContent = b.detail || 'no snapshot yet';
      return;
    }
    const url = URL.createObjectURL(await res.blob());
    img.onload = () => URL.revokeObjectURL(url);
    img.src = url;
    $('jd-samples-note').textContent = 'latest snapshot, seed 1';
  } catch (e) { $('jd-samples-note').textContent = e.message; }
}

function stopStream() {
  if (state.stream) { state.stream.abort(); state.stream = null; }
  if (state.imgTimer) { clearInterval(state.imgTimer); state.imgTimer = null; }
}

// Server-Sent Events over fetch (EventSource cannot send the Authorization header).
async function follow(id) {
  const ctrl = new AbortController();
  state.stream = ctrl;
  try {
    const res = await api(`/v1/jobs/${id}/events`, { signal: ctrl.signal, headers: { Accept: 'text/event-stream' } });
    if (!res.ok || !res.body) return;
    const reader = res.body.getReader(), dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, cut); buf = buf.slice(cut + 2);
        const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
        if (!data) continue;
        try { showJob(JSON.parse(data)); } catch (_) { /* keep-alive or partial */ }
      }
    }
  } catch (e) { if (e.name !== 'AbortError') console.warn(e); }
  if (state.selected === id) { const j = await apiJSON(`/v1/jobs/${id}`); showJob(j); loadSamples(id); renderJobs(); }
}

async function selectJob(id) {
  stopStream();
  state.selected = id;
  state.history = [];
  $('job-detail').hidden = false;
  const j = await apiJSON(`/v1/jobs/${id}`);
  for (const h of j.history || []) state.history.push(h);
  showJob(j);
  loadSamples(id);
  renderJobs();
  if (j.status === 'running' || j.status === 'queued') {
    follow(id);
    state.imgTimer = setInterval(() => loadSamples(id), 5000);
  }
}

$('jd-cancel').addEventListener('click', async () => {
  if (!state.selected) return;
  try { await apiJSON(`/v1/jobs/${state.selected}/cancel`, { method: 'POST' }); } catch (e) { $('jd-error').textContent = e.message; }
  selectJob(state.selected);
});

// ---- create a job from the catalogue --------------------------------------------

function paramInput(p) {
  const id = 'p-' + p.name;
  let input;
  if (p.enum) {
    input = el('select', { id, 'data-name': p.name, 'data-type': p.type });
    if (!p.required && p.default === undefined) input.append(el('option', { value: '', text: '(default)' }));
    for (const v of p.enum) input.append(el('option', { value: v, text: v }));
    if (p.default !== undefined) input.value = String(p.default);
  } else if (p.type === 'boolean') {
    input = el('input', { id, type: 'checkbox', 'data-name': p.name, 'data-type': p.type });
    input.checked = p.default === true;
  } else {
    input = el('input', { id, 'data-name': p.name, 'data-type': p.type, placeholder: p.default !== undefined ? JSON.stringify(p.default) : '' });
  }
  return el('label', { for: id }, `${p.name}${p.required ? ' *' : ''}`, el('span', { text: p.description || '' }), input);
}

function renderParams() {
  const alg = state.algorithms.find((a) => a.name === $('jf-method').value);
  $('jf-method-summary').textContent = alg ? `${alg.summary || ''} Accepts: ${(alg.accepts || []).join(', ')} datasets.` : '';
  $('jf-params').replaceChildren(...(alg ? alg.parameters : []).map(paramInput));
}

function setPath(obj, path, v) {
  const keys = path.split('.');
  let o = obj;
  keys.slice(0, -1).forEach((k) => { o = o[k] = o[k] || {}; });
  o[keys[keys.length - 1]] = v;
}

function collectSpec() {
  const spec = { dataset_id: $('jf-dataset').value, method: $('jf-method').value };
  for (const input of $('jf-params').querySelectorAll('[data-name]')) {
    const name = input.dataset.name, type = input.dataset.type;
    if (type === 'boolean') { setPath(spec, name, input.checked); continue; }
    const raw = input.value.trim();
    if (raw === '') continue;
    let v = raw;
    if (type === 'integer' || type === 'number') v = Number(raw);
    else if (type.startsWith('array')) v = raw.replace(/[[\]]/g, '').split(',').map((s) => Number(s.trim()));
    else if (type === 'number|string') v = Number.isFinite(Number(raw)) ? Number(raw) : raw;
    setPath(spec, name, v);
  }
  return spec;
}

$('job-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  $('jf-errors').replaceChildren(); $('jf-result').hidden = true;
  const dry = $('jf-dry').checked;
  try {
    const res = await api('/v1/jobs' + (dry ? '?dry_run=true' : ''), {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(collectSpec()) });
    const body = await res.json().catch(() => ({}));
    if (!res.ok) {
      const errs = body.errors && body.errors.length ? body.errors : [{ field: '', message: body.detail || body.title }];
      $('jf-errors').replaceChildren(...errs.map((e) => el('li', { text: (e.field ? e.field + ': ' : '') + e.message })));
      return;
    }
    $('jf-result').textContent = JSON.stringify(body, null, 2); $('jf-result').hidden = false;
    if (!dry) { await renderJobs(); if (body.id) selectJob(body.id); }
  } catch (e) { $('jf-errors').replaceChildren(el('li', { text: e.message })); }
});

$('jf-method').addEventListener('change', renderParams);

async function renderAlgorithms() {
  const body = await apiJSON('/v1/algorithms');
  state.algorithms = body.items || body.algorithms || [];
  $('jf-method').replaceChildren(...state.algorithms.map((a) => el('option', { value: a.name, text: a.name })));
  renderParams();
}

async function refreshAll() {
  await Promise.all([renderDatasets(), renderJobs(), renderAlgorithms()].map((p) => p.catch((e) => console.warn(e))));
}

$('login-form').addEventListener('submit', (ev) => { ev.preventDefault(); signIn($('token').value.trim()); });
$('logout').addEventListener('click', () => signOut());
setInterval(() => { if (state.token && !$('app').hidden) { renderJobs().catch(() => {}); } }, 10000);

if (state.token) signIn(state.token); else signOut();
