// privgen dashboard, new job form: the methods that take the dataset's privacy
// model, their parameters, dry run and submit; refreshing every page.
'use strict';

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
