// privgen dashboard, quality reports of a job: list, create, progress,
// figures.
'use strict';

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
