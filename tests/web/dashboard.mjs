// Browser test of the dashboard against a live privgend (port 0, temp data
// dir), driven by playwright-core on Debian Chromium (no browser download).
// Every script index.html loads is served (web/js/, one per page), an unknown
// one is a 404. Everything a user does goes through the page: sign in; create a local
// dataset from a `privgen privatize` declaration (a too-small noise scale is
// refused next to its field) and upload its rows as CSV and NPY (a bad file
// is refused next to the file input); create a central dataset with a budget;
// the job form offers only the methods of the dataset's privacy model; a
// dry run shows a summary that matches the API's plan; a small dp_sinkhorn
// job runs to success (a job view with `warnings`, stubbed, shows them); CSV
// and PNG samples download (status, type, PNG
// signature); the ledger lists the job with the API's epsilon; deleting a
// dataset with a running job is refused with the server's reason, then
// succeeds once the job is cancelled (its page, meanwhile, resumes a cut event
// stream with Last-Event-ID); a typed table (created with the CLI)
// shows its schema, and its job a histogram per column and its first rows
// decoded; the page fits a 390 px phone screen.
// Quality reports: one against a public holdout and one against the central
// dataset (marked not DP) are created from the job page and their figures
// load (complete, non-zero natural size).
// No "server default" placeholder (delta names the cap); charts
// label their y axis and the epsilon chart says the plan was charged up
// front; the job list shows times and filters by status and dataset; the
// report form defaults to a public dataset.
// Screenshots: argv[4] (desktop), the same name with -390 (phone), -jobs and
// -job (close-ups of the job list and the job's charts).
//
// Usage: node dashboard.mjs PRIVGEND PRIVGEN SCREENSHOT.png
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const [privgend, privgen, shot] = process.argv.slice(2);
const shotPhone = shot.replace(/(\.png)?$/, '-390.png');
const here = path.dirname(fileURLToPath(import.meta.url));
if (!fs.existsSync(path.join(here, 'node_modules', 'playwright-core'))) {
  // `make deps` does this; a bare cmake/ctest run gets the pinned version here.
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--silent'], { cwd: here, stdio: 'inherit' });
}
const { chromium } = await import(path.join(here, 'node_modules', 'playwright-core', 'index.mjs'));

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'privgen-web-'));
const dataDir = path.join(tmp, 'var'), portFile = path.join(tmp, 'port');
const server = spawn(privgend, ['--listen', '127.0.0.1:0', '--data-dir', dataDir, '--port-file', portFile],
                     { stdio: ['ignore', 'ignore', 'inherit'] });
process.on('exit', () => server.kill('SIGKILL')); // even when a handler throws
let browser = null;
const fail = (msg) => { throw new Error(msg); };
const step = (msg) => console.log('# ' + msg);

async function waitFor(fn, what, ms = 20000) {
  const t0 = Date.now();
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() - t0 > ms) fail('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// A 2-D little-endian float NPY (what `privgen privatize` writes) as CSV text.
function npyToCsv(file) {
  const b = fs.readFileSync(file);
  if (b.toString('latin1', 1, 6) !== 'NUMPY') fail(file + ' is not NPY');
  const v1 = b[6] === 1, start = v1 ? 10 : 12; // magic, version, header length, header
  const off = start + (v1 ? b.readUInt16LE(8) : b.readUInt32LE(8)), header = b.toString('latin1', start, off);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1], shape = /'shape':\s*\((\d+),\s*(\d+)\)/.exec(header);
  const [n, d] = [Number(shape[1]), Number(shape[2])], w = descr === '<f4' ? 4 : 8;
  if (!['<f4', '<f8'].includes(descr) || /True/.test(/'fortran_order':\s*(\w+)/.exec(header)[1])) fail('unexpected NPY ' + header);
  const lines = ['x,y'];
  for (let i = 0; i < n; i++) {
    const row = [];
    for (let j = 0; j < d; j++) { const o = off + (i * d + j) * w; row.push(w === 4 ? b.readFloatLE(o) : b.readDoubleLE(o)); }
    lines.push(row.join(','));
  }
  return lines.join('\n') + '\n';
}

try {
  const port = await waitFor(() => fs.existsSync(portFile) && fs.readFileSync(portFile, 'utf8').trim(), 'the port file');
  const tokenFile = path.join(dataDir, 'admin.token');
  const token = await waitFor(() => fs.existsSync(tokenFile) && fs.readFileSync(tokenFile, 'utf8').trim(), 'the admin token');
  const url = `http://127.0.0.1:${port}`;
  const env = Object.assign({}, process.env, { PRIVGEN_URL: url, PRIVGEN_TOKEN: token, XDG_CONFIG_HOME: tmp });
  const cli = (...args) => execFileSync(privgen, args, { env, cwd: tmp, encoding: 'utf8' });
  const cliJSON = (...args) => JSON.parse(cli(...args, '--json'));
  const apiGet = async (p) => { const r = await fetch(url + p, { headers: { Authorization: 'Bearer ' + token } }); return r.json(); };
  const apiStatus = async (p) => (await fetch(url + p, { headers: { Authorization: 'Bearer ' + token } })).status;

  // Files a data owner would have: clean rows, and their privatized copy with its declaration.
  cli('toy', 'halfcircle', '--n', '1000', '-o', 'clean.csv');
  const decl = cli('privatize', '--mechanism', 'laplace', '--epsilon', '5', '--clip', 'l1:1', '--in', 'clean.csv', '--out', 'priv.npy');
  fs.writeFileSync(path.join(tmp, 'decl.json'), decl);
  const privCsv = npyToCsv(path.join(tmp, 'priv.npy')).split('\n').slice(0, 301).join('\n') + '\n'; // header + 300 rows
  fs.writeFileSync(path.join(tmp, 'priv300.csv'), privCsv);
  fs.writeFileSync(path.join(tmp, 'bad.csv'), 'x,y\n0.1,0.2\n0.3\n');

  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium', headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, acceptDownloads: true });
  const page = await context.newPage();
  const errors = [], external = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('request', (r) => { if (!r.url().startsWith(url) && !r.url().startsWith('blob:') && !r.url().startsWith('data:')) external.push(r.url()); });
  const listUrls = [];
  page.on('request', (r) => { if (r.url().includes('/v1/jobs?') && r.method() === 'GET') listUrls.push(r.url()); });

  step('scripts');
  // Every script index.html names is served as JavaScript, each the file in
  // web/js/ (embedded at build time); an unknown name is a 404.
  const html = await (await fetch(url + '/')).text();
  const scripts = [...html.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]);
  const onDisk = fs.readdirSync(path.join(here, '..', '..', 'web', 'js')).filter((f) => f.endsWith('.js')).sort();
  if (scripts.map((s) => s.replace(/^\/js\//, '')).sort().join() !== onDisk.join())
    fail(`index.html loads ${scripts.join(', ')}, web/js has ${onDisk.join(', ')}`);
  if (scripts[scripts.length - 1] !== '/js/main.js') fail('main.js must load last: ' + scripts.join(', '));
  for (const s of scripts) {
    const r = await fetch(url + s);
    if (r.status !== 200 || !r.headers.get('content-type').startsWith('text/javascript'))
      fail(`${s}: ${r.status} ${r.headers.get('content-type')}`);
    if (await r.text() !== fs.readFileSync(path.join(here, '..', '..', 'web', s), 'utf8')) fail(s + ' differs from web' + s);
  }
  if ((await fetch(url + '/js/nope.js')).status !== 404) fail('/js/nope.js is not a 404');

  step('sign in');
  await page.goto(url + '/');
  const icon = await page.$eval('link[rel=icon]', (l) => l.href);
  if (!icon.startsWith('data:image/svg+xml')) fail('no inline favicon: ' + icon);
  await page.fill('#token', token);
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('#app:not([hidden])');

  step('create a local dataset from the declaration; a too-small noise scale is refused beside its field');
  await page.click('#ds-new-toggle');
  await page.fill('#df-name', 'halfcircle-ldp');
  await page.fill('#df-shape', '2');
  await page.fill('#df-lo', '-4');
  await page.fill('#df-hi', '4');
  await page.check('input[name=df-model][value=local]');
  await page.setInputFiles('#df-decl', path.join(tmp, 'decl.json'));
  const declared = JSON.parse(decl);
  await page.waitForFunction((b) => Number(document.getElementById('df-noise').value) === b, declared.noise_scale)
    .catch(() => fail('the declaration did not fill the noise scale'));
  await page.fill('#df-noise', '0.01');
  await page.click('#ds-form button[type=submit]');
  const noiseErr = await page.waitForSelector('#df-noise.invalid ~ .field-error');
  if (!/below the minimum/.test(await noiseErr.textContent())) fail('noise error: ' + await noiseErr.textContent());
  await page.fill('#df-noise', String(declared.noise_scale));
  await page.click('#ds-form button[type=submit]');
  await page.waitForSelector('#ds-detail:not([hidden])');
  const local = (await apiGet('/v1/datasets')).items.find((d) => d.name === 'halfcircle-ldp');
  if (!local || local.privacy.model !== 'local' || local.privacy.noise_scale !== declared.noise_scale || local.shape[0] !== 2)
    fail('created dataset: ' + JSON.stringify(local));

  step('upload: a bad CSV is refused beside the file input, the good one adds 300 rows');
  await page.setInputFiles('#up-file', path.join(tmp, 'bad.csv'));
  await page.click('#up-submit');
  const upErr = await page.waitForSelector('#up-form .field-error');
  if (!/line 3/.test(await upErr.textContent())) fail('upload error: ' + await upErr.textContent());
  await page.setInputFiles('#up-file', path.join(tmp, 'priv300.csv'));
  await page.click('#up-submit');
  await page.waitForFunction(() => /Added 300 rows/.test(document.getElementById('up-result').textContent));
  await page.waitForFunction((id) => {
    const tr = document.querySelector(`#datasets tr[data-id="${id}"]`);
    return tr && tr.querySelector('td[data-label=Rows]').textContent.trim() === '300';
  }, local.id);

  await page.setInputFiles('#up-file', path.join(tmp, 'priv.npy')); // NPY goes up as application/x-npy
  await page.click('#up-submit');
  await page.waitForFunction(() => /Added 1,000 rows from priv.npy; the dataset now has 1,300/.test(document.getElementById('up-result').textContent));
  if ((await apiGet(`/v1/datasets/${local.id}`)).n !== 1300) fail('the NPY upload did not add 1000 rows');

  step('create a central dataset with a budget and upload its rows');
  await page.click('#ds-new-toggle');
  await page.fill('#df-name', 'halfcircle-central');
  await page.fill('#df-shape', '2');
  await page.fill('#df-lo', '-1.5');
  await page.fill('#df-hi', '1.5');
  await page.check('input[name=df-model][value=central]');
  await page.fill('#df-beps', '10');
  await page.fill('#df-bdelta', '1e-5');
  await page.click('#ds-form button[type=submit]');
  await page.waitForFunction(() => document.getElementById('dd-name').textContent === 'halfcircle-central');
  const central = (await apiGet('/v1/datasets')).items.find((d) => d.name === 'halfcircle-central');
  if (!central || central.privacy.budget.epsilon !== 10 || central.privacy.budget.delta !== 1e-5) fail('central: ' + JSON.stringify(central));
  await page.setInputFiles('#up-file', path.join(tmp, 'clean.csv'));
  await page.click('#up-submit');
  await page.waitForFunction(() => /now has 1,000/.test(document.getElementById('up-result').textContent));
  await page.waitForSelector('#ledger-empty:not([hidden])');

  step('the job form offers only the methods of the dataset\'s privacy model');
  const algs = (await apiGet('/v1/algorithms')).items;
  const methodsFor = (m) => algs.filter((a) => a.accepts.includes(m)).map((a) => a.name).sort().join(',');
  const offered = async () => (await page.$$eval('#jf-method option', (o) => o.map((x) => x.value))).sort().join(',');
  await page.selectOption('#jf-dataset', local.id);
  if (await offered() !== methodsFor('local')) fail(`local offers ${await offered()}`);
  await page.selectOption('#jf-dataset', central.id);
  if (await offered() !== methodsFor('central') || (await offered()).includes('entropic_gan')) fail(`central offers ${await offered()}`);
  await page.selectOption('#jf-method', 'dp_sinkhorn');
  for (const basic of ['train.steps', 'train.batch_size', 'privacy.epsilon', 'privacy.delta'])
    if (!(await page.$(`#jf-basic [data-name="${basic}"]`))) fail('no basic field ' + basic);
  if (await page.$('#jf-basic [data-name="ot.max_iter"]')) fail('an advanced parameter among the basic ones');
  if (await page.$eval('#jf-advanced', (d) => d.open)) fail('advanced parameters open by default');

  step('no "server default": an empty delta says it is the dataset\'s cap, epsilon that it is required');
  if (await page.getAttribute('[data-name="privacy.delta"]', 'placeholder') !== 'dataset\'s cap: 1e−5')
    fail('delta placeholder: ' + await page.getAttribute('[data-name="privacy.delta"]', 'placeholder'));
  if (!/required/.test(await page.getAttribute('[data-name="privacy.epsilon"]', 'placeholder'))) fail('epsilon placeholder');
  if (/server default/.test(await page.$eval('#job-form', (f) => f.innerHTML))) fail('a "server default" is left in the job form');

  step('no epsilon on central data: the server\'s message, beside the epsilon field, says what to give');
  await page.click('#jf-dry');
  const epsErr = await page.waitForSelector('[data-name="privacy.epsilon"].invalid ~ .field-error');
  const epsMsg = await epsErr.textContent();
  if (!/privacy\.epsilon = 1 \(privacy\.delta defaults to the dataset's cap delta\)/.test(epsMsg) || /[{}]/.test(epsMsg))
    fail('missing epsilon: ' + epsMsg);

  step('a field error from the server lands beside its field (inside the advanced section)');
  await page.fill('[data-name="train.steps"]', '20');
  await page.fill('[data-name="train.batch_size"]', '50');
  await page.fill('[data-name="privacy.epsilon"]', '1');
  await page.fill('[data-name="privacy.delta"]', '1e-6');
  await page.click('#jf-advanced summary');
  await page.fill('[data-name="model.hidden"]', '16');
  await page.fill('[data-name="ot.max_iter"]', '0');
  await page.click('#jf-dry');
  const iterErr = await page.waitForSelector('[data-name="ot.max_iter"].invalid ~ .field-error');
  if (!(await iterErr.isVisible())) fail('the ot.max_iter error is hidden');

  step('dry run: a summary matching the API plan, not JSON');
  await page.fill('[data-name="ot.max_iter"]', '20');
  const [dryRes] = await Promise.all([
    page.waitForResponse((r) => r.url().includes('/v1/jobs?dry_run=true')),
    page.click('#jf-dry'),
  ]);
  const dry = await dryRes.json();
  await page.waitForSelector('#jf-plan:not([hidden])');
  const planText = await page.textContent('#jf-plan');
  const sig3 = (x) => String(Number(x.toPrecision(3)));
  for (const want of [`ε = ${sig3(dry.plan.epsilon)}`, `σ = ${sig3(dry.plan.noise_multiplier)}`, 'q = 0.05', '20', 'MiB', 'fits'])
    if (!planText.includes(want)) fail(`dry-run summary lacks "${want}": ${planText}`);
  if (planText.includes('{') || dry.spec.train.steps !== 20 || dry.spec.model.hidden[0] !== 16) fail('dry run: ' + planText);

  step('start the job and follow it to success');
  const [startRes] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/v1/jobs') && r.request().method() === 'POST'),
    page.click('#jf-start'),
  ]);
  const job = await startRes.json();
  if (startRes.status() !== 202) fail('start: ' + JSON.stringify(job));
  await page.waitForFunction((id) => document.getElementById('jd-id').textContent === id &&
                                     document.getElementById('jd-status').textContent === 'succeeded', job.id, { timeout: 60000 });
  await page.waitForFunction(() => /20 \/ 20/.test(document.getElementById('jd-facts').textContent));
  await page.waitForFunction(() => { const i = document.getElementById('jd-samples'); return i.complete && i.naturalWidth > 0; });
  step('charts say what their y axis measures; the ε chart says the plan was charged up front');
  for (const [id, label] of [['jd-loss', 'training loss'], ['jd-eps', 'ε used so far']]) {
    // The label is drawn up the left edge, left of the tick values.
    const inked = await page.$eval('#' + id, (c) => {
      const d = c.getContext('2d').getImageData(0, 0, Math.round(18 * (window.devicePixelRatio || 1)), c.height).data;
      let n = 0; for (let i = 3; i < d.length; i += 4) n += d[i] > 0; return { n, label: c.dataset.ylabel };
    });
    if (inked.label !== label || inked.n < 20) fail(`${id}: y label ${JSON.stringify(inked)}`);
  }
  const epsNote = await page.textContent('#jd-eps-note');
  if (!/charged the whole plan \(ε = 1 at δ = 1e−6\) before the job read a row/.test(epsNote)) fail('ε note: ' + epsNote);

  step('the job list shows when a job was created and how long it ran, and filters by status and dataset');
  const jobRow = `#jobs tr[data-id="${job.id}"]`;
  const created = await page.getAttribute(`${jobRow} td[data-label=Created] time`, 'datetime');
  const view = await apiGet(`/v1/jobs/${job.id}`);
  if (created !== view.created_at || !/^\d+ s$|min/.test(await page.textContent(`${jobRow} td[data-label=Ran]`)))
    fail(`job times: ${created} vs ${view.created_at}, ran ${await page.textContent(`${jobRow} td[data-label=Ran]`)}`);
  await page.selectOption('#jl-status', 'failed');
  await page.waitForSelector(jobRow, { state: 'detached' });
  if (!/No job matches/.test(await page.textContent('#jobs-empty'))) fail('empty filter text');
  await page.selectOption('#jl-status', 'succeeded');
  await page.waitForSelector(jobRow);
  await page.selectOption('#jl-dataset', central.id);
  await page.waitForSelector(jobRow);
  if ((await page.$$eval('#jl-dataset option', (o) => o.map((x) => x.value))).includes(local.id)) fail('a dataset without jobs in the filter');
  await page.selectOption('#jl-status', '');
  await page.selectOption('#jl-dataset', '');
  // Close-ups of the job list and the charts, next to the full-page shots.
  await page.locator('#jobs-card').screenshot({ path: shot.replace(/(\.png)?$/, '-jobs.png') });
  await page.locator('#job-detail .grid').screenshot({ path: shot.replace(/(\.png)?$/, '-job.png') });

  const warnings = (await apiGet(`/v1/jobs/${job.id}`)).warnings || [];
  const shownWarnings = await page.$$eval('#jd-warnings li', (li) => li.length);
  if (shownWarnings !== warnings.length) fail(`${warnings.length} warnings in the job, ${shownWarnings} shown`);
  // A job view that carries warnings (stubbed here: whether this tiny job has any is not the point).
  const warned = (u) => u.pathname === `/v1/jobs/${job.id}`;
  await page.route(warned, async (route) => {
    const res = await route.fetch();
    const body = await res.json();
    body.warnings = ['the loss rose over the last quarter of training', 'most samples fall outside the declared range',
      { source: 'trainer', code: 'no_class_signal', step: 0,
        message: 'The privatized rows show no class difference above their noise: every class is sampled alike.' }];
    await route.fulfill({ response: res, json: body });
  });
  await page.click(`#jobs tr[data-id="${job.id}"]`);
  await page.waitForFunction(() => document.querySelectorAll('#jd-warnings:not([hidden]) li').length === 3);
  if (!(await page.textContent('#jd-warnings')).includes('loss rose')) fail('warnings not shown');
  // A trainer's warning (an object) shows its code and its sentence.
  const tw = await page.textContent('#jd-warnings li.trainer-warning[data-code="no_class_signal"]').catch(() => null);
  if (!tw || !tw.includes('no_class_signal') || !tw.includes('no class difference')) fail(`trainer warning shown as ${tw}`);
  await page.unroute(warned);
  await page.click(`#jobs tr[data-id="${job.id}"]`);
  await page.waitForFunction((n) => document.querySelectorAll('#jd-warnings li').length === n, warnings.length);

  step('downloads: CSV and PNG with n, seed and frame');
  await page.fill('#dl-n', '50');
  await page.fill('#dl-seed', '3');
  const [csvRes, csvDl] = await Promise.all([
    page.waitForResponse((r) => r.url().includes(`/v1/jobs/${job.id}/samples?`) && r.url().includes('format=csv')),
    page.waitForEvent('download'),
    page.click('#dl-form [data-format=csv]'),
  ]);
  const csvQ = new URL(csvRes.url()).searchParams;
  if (csvRes.status() !== 200 || !csvRes.headers()['content-type'].startsWith('text/csv') || csvQ.get('n') !== '50' || csvQ.get('seed') !== '3')
    fail(`CSV: ${csvRes.status()} ${csvRes.headers()['content-type']} ${csvRes.url()}`);
  // The body as saved by the browser (the page fetched it with the token, then saved the blob).
  const csvText = fs.readFileSync(await csvDl.path(), 'utf8');
  const csvRows = csvText.trim().split('\n').filter((l) => /^-?[\d.]/.test(l));
  if (csvRows.length !== 50 || csvRows.some((l) => l.split(',').length !== 2)) fail('CSV body has ' + csvRows.length + ' rows: ' + JSON.stringify(csvText.slice(0, 200)));
  if (!csvDl.suggestedFilename().endsWith('.csv')) fail('CSV saved as ' + csvDl.suggestedFilename());
  await page.selectOption('#dl-frame', 'range');
  const [pngRes, pngDl] = await Promise.all([
    page.waitForResponse((r) => r.url().includes(`/v1/jobs/${job.id}/samples?`) && r.url().includes('format=png')),
    page.waitForEvent('download'),
    page.click('#dl-form [data-format=png]'),
  ]);
  const png = fs.readFileSync(await pngDl.path());
  if (pngRes.status() !== 200 || pngRes.headers()['content-type'] !== 'image/png' ||
      !png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) ||
      new URL(pngRes.url()).searchParams.get('frame') !== 'range')
    fail(`PNG: ${pngRes.status()} ${pngRes.headers()['content-type']} ${png.subarray(0, 8).toString('hex')} ${pngRes.url()}`);

  step('quality reports: against a public holdout, then private data (marked); the figures render');
  const holdout = cliJSON('datasets', 'create', '--name', 'holdout', '--shape', '2', '--range', '-1.5:1.5', '--model', 'public');
  cli('toy', 'halfcircle', '--n', '400', '--seed', '11', '-o', 'holdout.csv');
  cli('datasets', 'append', holdout.id, 'holdout.csv');
  // a private dataset of the same shape, newer than the holdout: the form still defaults to the public one
  cliJSON('datasets', 'create', '--name', 'later', '--shape', '2', '--range', '-1.5:1.5', '--model', 'central',
          '--budget-epsilon', '1', '--budget-delta', '1e-5');
  await page.click(`#jobs tr[data-id="${job.id}"]`);
  await page.waitForSelector(`#rp-against option[value="${holdout.id}"]`, { state: 'attached' });
  await page.waitForFunction(() => document.querySelectorAll('#rp-against option').length >= 3);
  if (await page.$eval('#rp-against', (s) => s.value) !== holdout.id) fail('the report form does not default to the public holdout');
  const reportRendered = async (what, rid) => {
    // The view shows this report (not the previous one) and it succeeded.
    await page.waitForFunction((id) => document.getElementById('rp-id').textContent === id &&
                                       document.getElementById('rp-status').textContent === 'succeeded', rid, { timeout: 60000 });
    const want = (await apiGet(`/v1/jobs/${job.id}/reports/${rid}`)).figures;
    await page.waitForFunction((n) => { const im = [...document.querySelectorAll('#rp-figures img')];
      return im.length === n && im.every((i) => i.complete && i.naturalWidth > 0 && i.naturalHeight > 0); }, want.length, { timeout: 20000 });
    const names = await page.$$eval('#rp-figures img', (im) => im.map((i) => i.dataset.name));
    if (want.length < 3 || names.join() !== want.join()) fail(`${what}: figures ${names} shown, ${want} in the report`);
  };
  for (const [against, n, marked] of [[holdout.id, '500', false], [central.id, '300', true]]) {
    await page.selectOption('#rp-against', against);
    await page.fill('#rp-n', n);
    await page.fill('#rp-seed', '1');
    const [rpRes] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`/v1/jobs/${job.id}/reports`) && r.request().method() === 'POST'),
      page.click('#rp-create'),
    ]);
    if (rpRes.status() !== 202) fail('report: ' + rpRes.status() + ' ' + (await rpRes.text()));
    await reportRendered(against, (await rpRes.json()).id);
    const mark = await page.$eval('#rp-mark', (e) => (e.hidden ? '' : e.textContent));
    if (marked !== /Not DP - for the data owner/.test(mark)) fail(`report against ${against}: mark "${mark}"`);
    if (!/sliced W2/.test(await page.textContent('#rp-facts'))) fail('report facts: ' + (await page.textContent('#rp-facts')));
  }
  if ((await page.$$eval('#rp-list tbody tr', (tr) => tr.length)) !== 2) fail('the report list does not show both reports');

  step('the ledger lists the job with the API\'s numbers; the gauge agrees');
  const budget = await apiGet(`/v1/datasets/${central.id}/budget`);
  if (!(budget.spent_epsilon > 0) || budget.entries.length !== 1) fail('budget: ' + JSON.stringify(budget));
  await page.click(`#datasets tr[data-id="${central.id}"] .link-btn`);
  const entry = await page.waitForSelector(`#ledger tr[data-job="${job.id}"]`);
  const entryText = await entry.textContent();
  if (!entryText.includes(sig3(budget.entries[0].epsilon)) || !entryText.includes('charged')) fail('ledger row: ' + entryText);
  const gauge = await page.waitForSelector(`#datasets tr[data-id="${central.id}"] .gauge[role=meter]`);
  const now = Number(await gauge.getAttribute('aria-valuenow')), max = Number(await gauge.getAttribute('aria-valuemax'));
  if (Math.abs(now - budget.spent_epsilon) > 1e-9 * Math.max(1, now) || max !== 10)
    fail(`gauge shows ${now} / ${max}, the ledger says ${budget.spent_epsilon} / 10`);
  await page.screenshot({ path: shot, fullPage: true });

  step('the job list polled is the light one; history comes only with the open job');
  if (!listUrls.length || listUrls.some((u) => !u.includes('history=false'))) fail('job list requests: ' + listUrls.join(' '));

  step('delete: refused with the server\'s reason while a job runs, done once it is cancelled');
  const long = cliJSON('jobs', 'create', '--dataset', local.id, '--method', 'entropic_gan', '--steps', '1000000',
                       '--batch', '32', '--set', 'model.hidden=[8]', '--set', 'ot.max_iter=5');
  await page.click(`#datasets tr[data-id="${local.id}"] .link-btn`);
  await page.click('#dd-delete');
  await page.waitForSelector('#dd-confirm:not([hidden])');
  if (!(await page.textContent('#dd-confirm-text')).includes('halfcircle-ldp')) fail('the confirmation does not name the dataset');
  await page.click('#dd-confirm-no');
  if ((await apiGet(`/v1/datasets/${local.id}`)).id !== local.id) fail('"Keep it" deleted the dataset');
  await page.click('#dd-delete');
  await page.click('#dd-confirm-yes');
  await page.waitForFunction(() => /a queued or running job uses this dataset/.test(document.getElementById('dd-error').textContent));
  await page.waitForSelector(`#jobs tr[data-id="${long.id}"]`, { timeout: 15000 });
  await page.click(`#jobs tr[data-id="${long.id}"]`);
  await page.waitForFunction((id) => document.getElementById('jd-id').textContent === id, long.id);

  step('the job page resumes its event stream with Last-Event-ID after a cut and after a failed connection');
  for (let i = 0; i < 200 && (await apiGet(`/v1/jobs/${long.id}`)).status !== 'running'; i++) await new Promise((r) => setTimeout(r, 100));
  const evPath = (u) => u.pathname === `/v1/jobs/${long.id}/events`;
  const sent = []; // the Last-Event-ID of each stream request
  let cutId = '', cutStep = -1;
  await page.route(evPath, async (route) => {
    const k = sent.length;
    sent.push(route.request().headers()['last-event-id'] || '');
    if (k === 0) { // one event in full, then half of the next (id and type, no data), then the end
      const v = await apiGet(`/v1/jobs/${long.id}`);
      const cks = v.checkpoints || [];
      cutStep = v.progress.step;
      cutId = `${v.status}:${cutStep}:${cks.length ? cks[cks.length - 1].step : -1}`;
      await route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream' },
                            body: `id: ${cutId}\nevent: progress\ndata: ${JSON.stringify(v)}\n\nid: running:999999999:-1\nevent: progress\n` });
    } else if (k === 1) {
      await route.abort('connectionreset');
    } else {
      await route.continue();
    }
  });
  await page.click(`#jobs tr[data-id="${long.id}"]`);
  await waitFor(() => sent.length >= 3, 'three event stream requests', 30000);
  if (sent[0] !== '' || sent[1] !== cutId || sent[2] !== cutId)
    fail(`Last-Event-ID sent: ${JSON.stringify(sent)}, the last full event was ${cutId}`);
  // the resumed (real) stream moves the page past the state it was cut at
  await page.waitForFunction((s) => { const m = /(\d+) \/ 1000000/.exec(document.getElementById('jd-facts').textContent);
                                      return m && Number(m[1]) > s; }, cutStep, { timeout: 30000 });
  await page.unroute(evPath);

  step('a stream the server closes shows its reason, is not shown as a job and is not reopened');
  let closedReqs = 0;
  await page.route(evPath, async (route) => {
    closedReqs++;
    await route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream' },
                          body: `event: closed\ndata: ${JSON.stringify({ title: 'Not Found', status: 404, detail: 'job removed under the stream' })}\n\n` });
  });
  await page.click(`#jobs tr[data-id="${long.id}"]`);
  await page.waitForFunction(() => /closed: job removed under the stream/.test(document.getElementById('jd-error').textContent),
                             null, { timeout: 15000 });
  if ((await page.textContent('#jd-id')) !== long.id) fail('the closed event was shown as a job');
  await new Promise((r) => setTimeout(r, 3000)); // a reconnect would come after 1-2 s
  if (closedReqs !== 1) fail(`the closed stream was reopened ${closedReqs - 1} time(s)`);
  await page.unroute(evPath);

  step('job delete: confirmed, refused with the server\'s reason while it runs, done once cancelled');
  await page.click('#jd-delete');
  await page.waitForSelector('#jd-confirm:not([hidden])');
  if (!(await page.textContent('#jd-confirm-text')).includes(long.id)) fail('the job confirmation does not name the job');
  await page.click('#jd-confirm-no');
  if (!(await page.$eval('#jd-confirm', (d) => d.hidden))) fail('"Keep it" left the confirmation open');
  const [refused] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith(`/v1/jobs/${long.id}`) && r.request().method() === 'DELETE'),
    page.click('#jd-delete').then(() => page.click('#jd-confirm-yes')),
  ]);
  const refusedBody = await refused.json();
  if (refused.status() !== 409) fail(`deleting a running job: ${refused.status()} ${JSON.stringify(refusedBody)}`);
  await page.waitForFunction((msg) => document.getElementById('jd-delete-error').textContent.includes(msg),
                             refusedBody.detail || refusedBody.title);
  if (!/cancel it/.test(await page.textContent('#jd-delete-error'))) fail('the refusal does not say to cancel first');
  if ((await apiGet(`/v1/jobs/${long.id}`)).id !== long.id) fail('the running job was deleted');
  await page.click('#jd-cancel:not([hidden])');
  for (let i = 0; i < 200 && (await apiGet(`/v1/jobs/${long.id}`)).status === 'running'; i++) await new Promise((r) => setTimeout(r, 100));
  if ((await apiGet(`/v1/jobs/${long.id}`)).status !== 'cancelled') fail('the long job was not cancelled');
  await page.click(`#jobs tr[data-id="${long.id}"]`);
  await page.waitForFunction((id) => document.getElementById('jd-id').textContent === id, long.id);
  await page.click('#jd-delete');
  await page.click('#jd-confirm-yes');
  await page.waitForFunction((id) => !document.querySelector(`#jobs tr[data-id="${id}"]`), long.id);
  if (!(await page.$eval('#job-detail', (d) => d.hidden))) fail('the deleted job stays open');
  if ((await apiStatus(`/v1/jobs/${long.id}`)) !== 404) fail('the deleted job still answers');
  await page.click(`#datasets tr[data-id="${local.id}"] .link-btn`);
  await page.click('#dd-delete');
  await page.click('#dd-confirm-yes');
  await page.waitForFunction((id) => !document.querySelector(`#datasets tr[data-id="${id}"]`), local.id);
  const left = (await apiGet('/v1/datasets')).items.map((d) => d.id);
  if (left.includes(local.id) || !left.includes(central.id)) fail('datasets after delete: ' + left);

  step('a typed table: its schema in the dataset view; a job shows a histogram per column and its first rows');
  fs.writeFileSync(path.join(tmp, 'schema.json'), JSON.stringify({
    columns: [{ name: 'age', type: 'integer', min: 18, max: 99, nullable: true },
              { name: 'income', type: 'continuous', min: 0, max: 1500 },
              { name: 'job', type: 'categorical', categories: ['fixed', 'freelance', 'others'] },
              { name: 'owner', type: 'boolean' },
              { name: 'status', type: 'categorical', categories: ['good', 'bad'] }],
    label: 'status' }));
  const loans = ['status,owner,job,income,age'];
  for (let i = 0; i < 400; i++)
    loans.push(`${i % 3 ? 'good' : 'bad'},${i % 2 ? 'true' : 'false'},${['fixed', 'freelance', 'others'][i % 3]},${(i * 37) % 1500},${i % 10 ? 18 + (i % 80) : ''}`);
  fs.writeFileSync(path.join(tmp, 'loans.csv'), loans.join('\n') + '\n');
  const typed = cliJSON('datasets', 'create', '--schema', 'schema.json', '--name', 'loans', '--model', 'central',
                        '--budget-epsilon', '10', '--budget-delta', '1e-5');
  cli('datasets', 'append', typed.id, 'loans.csv');
  const tjob = cliJSON('jobs', 'create', '--dataset', typed.id, '--method', 'swd_flow', '--set', 'privacy.noise_multiplier=5',
                       '--set', 'flow.steps=10', '--set', 'flow.particles=100');
  for (let i = 0; i < 300 && (await apiGet(`/v1/jobs/${tjob.id}`)).status !== 'succeeded'; i++) await new Promise((r) => setTimeout(r, 100));
  if ((await apiGet(`/v1/jobs/${tjob.id}`)).status !== 'succeeded') fail('the typed job did not succeed');
  await page.reload();
  await page.click(`#datasets tr[data-id="${typed.id}"] .link-btn`);
  await page.waitForSelector('#dd-schema-box:not([hidden])');
  const schemaRows = await page.$$eval('#dd-schema tbody tr', (trs) => trs.map((tr) => tr.textContent));
  if (schemaRows.length !== 5 || !schemaRows[4].includes('status (label)') || !schemaRows[2].includes('fixed, freelance, others'))
    fail('schema table: ' + schemaRows.join(' | '));
  if (await page.isVisible('#up-hint-plain')) fail('a typed dataset shows the vector upload hint');
  await page.click(`#jobs tr[data-id="${tjob.id}"]`);
  await page.waitForFunction(() => { const i = document.getElementById('jd-samples'); return !i.hidden && i.complete && i.naturalWidth > 0; });
  await page.waitForSelector('#jd-rows-box:not([hidden])');
  const grid = await page.$$eval('#jd-rows tr', (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
  if (grid.length !== 11 || grid[0].join(',') !== 'age,income,job,owner,status') fail('first rows: ' + JSON.stringify(grid));
  for (const r of grid.slice(1)) {
    if (!['fixed', 'freelance', 'others'].includes(r[2]) || !['true', 'false'].includes(r[3]) || !['good', 'bad'].includes(r[4]) ||
        !(r[0] === '–' || (Number.isInteger(Number(r[0])) && Number(r[0]) >= 18 && Number(r[0]) <= 99)))
      fail('a decoded row is not valid under the schema: ' + r.join(','));
  }
  if (!(await page.textContent('#jd-samples-note')).includes('histogram per column')) fail('the samples note does not say histograms');

  step('390 px wide: no horizontal scrolling, every control within reach');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.click(`#datasets tr[data-id="${central.id}"] .link-btn`);
  await page.click(`#jobs tr[data-id="${job.id}"]`);
  await page.waitForFunction((id) => document.getElementById('jd-id').textContent === id, job.id);
  await page.click('#ds-new-toggle');
  await page.check('input[name=df-model][value=local]');
  if (!(await page.$eval('#jf-advanced', (d) => d.open))) await page.click('#jf-advanced summary');
  const overflow = await page.evaluate(() => {
    const out = [];
    for (const e of document.querySelectorAll('button, input, select, summary, a, canvas, img, table')) {
      const r = e.getBoundingClientRect();
      if (r.width > 0 && (r.right > 390.5 || r.left < -0.5)) out.push(`${e.tagName}#${e.id || e.dataset.name || ''} ${r.left}..${r.right}`);
    }
    return { scroll: document.documentElement.scrollWidth, out };
  });
  if (overflow.scroll > 390 || overflow.out.length) fail(`390 px: scrollWidth ${overflow.scroll}; outside: ${overflow.out.join(', ')}`);
  await page.screenshot({ path: shotPhone, fullPage: true });

  if (errors.length) fail('page errors: ' + errors.join('; '));
  if (external.length) fail('requests outside the server: ' + external.join(', '));
  console.log(`ok dashboard: datasets created and uploaded, dry run ε ${sig3(dry.plan.epsilon)}, job ${job.id} succeeded, ` +
              `ledger ε ${sig3(budget.spent_epsilon)} / 10, CSV + PNG downloaded, job and dataset delete refused then done, 390 px fits; ` +
              `screenshots ${shot} ${shotPhone}`);
} catch (e) {
  if (browser) for (const c of browser.contexts()) for (const p of c.pages()) await p.screenshot({ path: shot.replace(/(\.png)?$/, '-failed.png'), fullPage: true }).catch(() => {});
  throw e;
} finally {
  if (browser) await browser.close();
  server.kill('SIGTERM');
  await new Promise((r) => server.once('exit', r));
  fs.rmSync(tmp, { recursive: true, force: true });
}
