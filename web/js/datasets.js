// privgen dashboard, datasets page: list, detail (schema, rows, ledger),
// create, upload, delete.
'use strict';

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
