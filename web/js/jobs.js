// privgen dashboard, jobs page: list and filters, polling, a job's view
// (charts, samples, event stream), cancel, delete, sample downloads.
'use strict';

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
                     (j.warnings || []).length ? el('span', { class: 'warn-dot', title: j.warnings.map(warnText).join('\n'), text: ' ⚠' }) : null),
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
  // The server's warnings: sentences judged from the model (loss rising at the
  // end, samples outside the range, a collapsed column), then the trainer's own
  // ({source: "trainer", code, message}), which show their code.
  const warns = j.warnings || [];
  $('jd-warnings').hidden = warns.length === 0;
  $('jd-warnings').replaceChildren(...warns.map((w) => (w && w.code)
    ? el('li', { class: 'trainer-warning', 'data-code': w.code }, el('code', { text: w.code }), ' ' + (w.message || ''))
    : el('li', { text: warnText(w) })));
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
// A warning's text: a sentence, or an object's message.
function warnText(w) {
  return typeof w === 'string' ? w : (w && w.message) || JSON.stringify(w);
}
async function follow(id) {
  const ctrl = new AbortController();
  state.stream = ctrl;
  let lastId = '', pause = 1000, ended = false, closed = null;
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
        read: for (;;) {
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
            // A trainer's warning: the job view that follows (or came) lists it.
            if (field('event').pop() === 'warning') continue;
            // The server ended the stream (token revoked or expired, job gone,
            // token store unreachable): its data is a problem, not a job.
            if (field('event').pop() === 'closed') {
              try { closed = JSON.parse(data); } catch (_) { closed = { status: 0 }; }
              reader.cancel().catch(() => {});
              break read;
            }
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
    if (closed) {
      const why = closed.detail || closed.title || `status ${closed.status}`;
      if (closed.status === 401) { signOut(`The job's event stream was closed: ${why}`); return; }
      if (closed.status !== 503) { // 503: the server could not check the token; retry below
        if (live()) $('jd-error').textContent = `The event stream was closed: ${why}`;
        return;
      }
      closed = null;
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
