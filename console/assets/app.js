// The unilog console: one page per hash route, each drawn from the JSON
// endpoints under /ui/api/. Everything is built with DOM calls and
// textContent, never innerHTML, because record keys and values, topic and
// group names are whatever clients sent.
'use strict';

const state = { write: false, timer: null, charts: [] };
const PAGE = 50;

// h builds an element: h('td', {class: 'n'}, 'text', child, ...).
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

async function api(path, opts) {
  const res = await fetch('api/' + path, opts);
  const body = await res.json().catch(() => ({ error: res.status + ' ' + res.statusText }));
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

// change sends a write with the header the server requires of every change.
function change(method, path, body) {
  return api(path, {
    method,
    headers: { 'Content-Type': 'application/json', 'X-Unilog-Console': '1' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

function showError(err) {
  const box = document.getElementById('error');
  box.hidden = !err;
  box.textContent = err ? String(err.message || err) : '';
}

const fmt = new Intl.NumberFormat('en-US');
function num(v) { return v === null || v === undefined || v < 0 ? '-' : fmt.format(v); }
function bytes(v) {
  if (v === null || v === undefined || v < 0) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i === 0 ? v : v.toFixed(1)) + ' ' + units[i];
}
function ago(ns) { return (ns / 1e9).toFixed(1) + ' s'; }
// cell is a numeric cell carrying its raw value for tests and copying.
function cell(key, v, shown) { return h('td', { class: 'n', 'data-k': key, 'data-v': v }, shown === undefined ? num(v) : shown); }
function text(key, v) { return h('td', { 'data-k': key }, v); }

function table(head, rows) {
  return h('table', {}, h('thead', {}, h('tr', {}, head.map(c => h('th', { class: c.endsWith('#') ? 'n' : '' }, c.replace(/#$/, ''))))),
    h('tbody', {}, rows));
}

// pager draws "from-to of total" with previous and next.
function pager(total, offset, go) {
  const to = Math.min(total, offset + PAGE);
  return h('div', { class: 'bar' },
    h('button', { disabled: offset === 0, onclick: () => go(Math.max(0, offset - PAGE)) }, 'Previous'),
    h('span', { 'data-k': 'range' }, total === 0 ? 'none' : `${fmt.format(offset + 1)}-${fmt.format(to)} of ${fmt.format(total)}`),
    h('button', { disabled: to >= total, onclick: () => go(offset + PAGE) }, 'Next'));
}

// searchBox calls go with the text after typing stops.
function searchBox(q, placeholder, go) {
  let t;
  return h('input', { type: 'search', id: 'search', value: q, placeholder,
    oninput: e => { clearTimeout(t); t = setTimeout(() => go(e.target.value), 250); } });
}

// confirmAction opens the confirmation dialog; with expect set the user
// must type it (the name of what is deleted).
function confirmAction(message, expect) {
  const dlg = document.getElementById('confirm');
  document.getElementById('confirm-text').textContent = message;
  const row = document.getElementById('confirm-type-row');
  const input = document.getElementById('confirm-input');
  row.hidden = !expect;
  input.value = '';
  document.getElementById('confirm-expect').textContent = expect || '';
  return new Promise(resolve => {
    dlg.addEventListener('close', () => resolve(dlg.returnValue === 'ok' && (!expect || input.value === expect)), { once: true });
    dlg.showModal();
  });
}

async function act(message, expect, run, done) {
  // The page is stale from the click until it is drawn again (tests wait
  // for data-loaded); a cancel or a refusal leaves it as it was.
  const main = document.getElementById('main');
  const loaded = main.dataset.loaded;
  delete main.dataset.loaded;
  if (!await confirmAction(message, expect)) {
    main.dataset.loaded = loaded;
    return;
  }
  try {
    const res = await run();
    showError(null);
    done(res);
  } catch (err) {
    showError(err);
    main.dataset.loaded = loaded;
  }
}

function notice(msg) { return h('div', { class: 'notice', id: 'notice' }, msg); }

// chart draws columns [t, ...series] with uPlot.
function chart(title, data, series, width) {
  const box = h('div', { class: 'chart', 'data-chart': title }, h('h3', {}, title));
  const opts = {
    width: width || 420, height: 180,
    series: [{}, ...series.map((s, i) => ({ label: s, stroke: ['#2f6feb', '#c4320a', '#067647', '#7a5af8'][i % 4], width: 1.5, spanGaps: false }))],
    // At least a minute wide, so that the first points are not alone.
    scales: { x: { time: true, range: (u, min, max) => [Math.min(min, max - 60), max] } },
    axes: [{}, { size: 70 }],
  };
  state.charts.push(new uPlot(opts, data, box));
  return box;
}

// contentWidth is el's width inside its padding.
function contentWidth(el) {
  const cs = getComputedStyle(el);
  return el.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
}

// listing fetches the page of apiPath that params name (q, offset) and
// returns it with controls: the search box and pager, which move the
// hash (hashBase) to another search or page.
async function listing(params, apiPath, hashBase) {
  const q = params.get('q') || '', offset = +params.get('offset') || 0;
  const r = await api(`${apiPath}?limit=${PAGE}&offset=${offset}&q=${encodeURIComponent(q)}`);
  const go = (nq, noff) => { location.hash = `${hashBase}?q=${encodeURIComponent(nq)}&offset=${noff}`; };
  const controls = placeholder => [h('div', { class: 'bar' }, searchBox(q, placeholder, v => go(v, 0))), pager(r.total, offset, o => go(q, o))];
  return { r, controls };
}

// ---- pages ----

async function clusterPage(main) {
  const c = await api('cluster');
  const d = c.disk;
  const nodes = (c.nodes || []).map(n => h('tr', { 'data-row': n.id },
    cell('id', n.id, String(n.id) + (n.id === c.self ? ' (this node)' : '')), text('group', n.replica_group),
    text('role', n.role), cell('epoch', n.epoch), text('advertise', n.advertise), cell('log_end', n.log_end),
    cell('lag', n.lag_bytes), text('in_sync', n.role === 'leader' ? '-' : (n.in_sync ? 'yes' : 'no')),
    cell('heartbeat', n.heartbeat_age_ns, ago(n.heartbeat_age_ns)),
    h('td', { 'data-k': 'state', class: n.gone ? 'bad' : 'good' }, n.gone ? 'gone' : 'live')));
  const groups = (c.replica_groups || []).map(g => h('tr', { 'data-row': g.name },
    text('group', g.name), text('leader', g.leader < 0 ? 'none (released)' : String(g.leader)), cell('epoch', g.epoch),
    text('in_sync', (g.in_sync || []).join(', ') || 'none')));
  const used = d.total_bytes - d.free_bytes;
  main.replaceChildren(h('h1', {}, 'Cluster'),
    h('div', { class: 'cards' },
      h('div', { class: 'card' }, h('b', { id: 'log-state', class: d.read_only || d.write_failed ? 'bad' : 'good' },
        d.write_failed ? 'write failed' : d.read_only ? 'read-only (disk full)' : 'writable'), h('span', {}, 'this node')),
      h('div', { class: 'card' }, h('b', { id: 'commitlog-bytes', 'data-v': d.commitlog_bytes }, bytes(d.commitlog_bytes)), h('span', {}, 'commit log, ' + d.commitlog_files + (d.commitlog_files === 1 ? ' file' : ' files'))),
      h('div', { class: 'card' }, h('b', { id: 'disk-used' }, d.total_bytes ? `${bytes(used)} / ${bytes(d.total_bytes)}` : '-'),
        h('span', {}, 'disk used, ' + d.data_dir))),
    h('h2', {}, 'Nodes'),
    table(['Node', 'Replica group', 'Role', 'Epoch#', 'Advertise', 'Log end#', 'Lag (bytes)#', 'In sync', 'Heartbeat#', 'State'], nodes),
    h('h2', {}, 'Replica groups and leases'),
    table(['Replica group', 'Lease holder', 'Epoch#', 'In-sync followers'], groups));
  return 3000;
}

async function topicsPage(main, params) {
  const { r, controls } = await listing(params, 'topics', '#/topics');
  const rows = r.items.map(t => h('tr', { 'data-row': t.name },
    h('td', { 'data-k': 'name' }, h('a', { href: '#/topic/' + encodeURIComponent(t.name) }, t.name), t.internal ? h('span', { class: 'muted' }, ' internal') : null),
    cell('partitions', t.partitions), cell('records', t.records), cell('bytes', t.bytes, bytes(t.bytes)),
    cell('rate', t.produce_rate, t.produce_rate < 0 ? '-' : fmt.format(Math.round(t.produce_rate)) + '/s'),
    cell('fetch_rate', t.fetch_rate, t.fetch_rate < 0 ? '-' : bytes(t.fetch_rate) + '/s'),
    text('error', t.error || '')));
  const kids = [h('h1', {}, 'Topics'),
    ...controls('search topics'),
    table(['Topic', 'Partitions#', 'Records#', 'Bytes#', 'Produce rate#', 'Fetched here#', ''], rows)];
  if (state.write) {
    const name = h('input', { id: 'new-topic', placeholder: 'name' });
    const parts = h('input', { id: 'new-partitions', type: 'number', min: 1, value: 1 });
    kids.push(h('fieldset', {}, h('legend', {}, 'Create a topic'), h('div', { class: 'bar' }, name, parts,
      h('button', { class: 'primary', id: 'create-topic', onclick: () => act(`Create topic "${name.value}" with ${parts.value} partitions?`, null,
        () => change('POST', 'topics', { name: name.value, partitions: +parts.value }),
        () => { location.hash = '#/topic/' + encodeURIComponent(name.value); }) }, 'Create'))));
  }
  main.replaceChildren(...kids);
  // A rate needs two looks: the first comes back soon, not in 5 s.
  return r.items.some(t => t.produce_rate < 0) ? 1500 : 5000;
}

async function topicPage(main, params, name) {
  const base = '#/topic/' + encodeURIComponent(name);
  const { r, controls } = await listing(params, 'topics/' + encodeURIComponent(name), base);
  const rows = r.items.map(p => h('tr', { 'data-row': p.partition },
    h('td', { 'data-k': 'partition' }, h('a', { href: `${base}/${p.partition}` }, String(p.partition))),
    cell('leader', p.leader), cell('leader_epoch', p.leader_epoch), cell('log_start', p.log_start), cell('log_end', p.log_end),
    cell('records', p.records), cell('bytes', p.bytes, bytes(p.bytes)), text('error', p.error || '')));
  const kids = [h('h1', {}, 'Topic ', h('span', { id: 'topic-name' }, name)),
    h('p', {}, h('span', { id: 'partition-count', 'data-v': r.partitions }, num(r.partitions)), ' partitions'),
    ...controls('partition number'),
    table(['Partition', 'Leader#', 'Leader epoch#', 'Log start#', 'Log end#', 'Records#', 'Bytes#', ''], rows)];
  if (state.write) {
    const total = h('input', { id: 'total-partitions', type: 'number', min: r.partitions + 1, value: r.partitions + 1 });
    kids.push(h('fieldset', {}, h('legend', {}, 'Change'), h('div', { class: 'bar' },
      'Grow to', total, 'partitions',
      h('button', { class: 'primary', id: 'add-partitions', onclick: () => act(`Grow "${name}" to ${total.value} partitions? Partitions cannot be removed.`, null,
        () => change('POST', `topics/${encodeURIComponent(name)}/partitions`, { total: +total.value }), () => route()) }, 'Add partitions'),
      h('button', { class: 'danger', id: 'delete-topic', onclick: () => act(`Delete topic "${name}" and all its records?`, name,
        () => change('DELETE', `topics/${encodeURIComponent(name)}`), () => { location.hash = '#/topics'; }) }, 'Delete topic'))));
  }
  main.replaceChildren(...kids);
  return 5000;
}

async function partitionPage(main, params, name, partition) {
  const form = { offset: params.get('offset') || '', time: params.get('time') || '', format: params.get('format') || 'auto', limit: params.get('limit') || '20' };
  const qs = new URLSearchParams({ format: form.format, limit: form.limit });
  if (form.offset !== '') qs.set('offset', form.offset);
  if (form.time !== '') qs.set('time', form.time);
  const r = await api(`topics/${encodeURIComponent(name)}/partitions/${partition}/records?${qs}`);
  const offset = h('input', { id: 'rec-offset', type: 'number', min: 0, value: form.offset, placeholder: 'newest' });
  const time = h('input', { id: 'rec-time', value: form.time, placeholder: 'RFC 3339 or unix ms' });
  const format = h('select', { id: 'rec-format' }, ['auto', 'text', 'json', 'hex'].map(f => h('option', { value: f, selected: f === form.format }, f)));
  const limit = h('input', { id: 'rec-limit', type: 'number', min: 1, max: 500, value: form.limit });
  const base = `#/topic/${encodeURIComponent(name)}/${partition}`;
  const show = v => v === null ? h('span', { class: 'muted' }, 'null') : h('pre', { 'data-format': v.format }, v.text + (v.cut ? `\n... ${fmt.format(v.size)} bytes in all` : ''));
  const rows = r.records.map(rec => h('tr', { 'data-row': rec.offset },
    cell('offset', rec.offset), text('timestamp', new Date(rec.timestamp_ms).toISOString()),
    h('td', { 'data-k': 'key' }, show(rec.key)), h('td', { 'data-k': 'value' }, show(rec.value)),
    h('td', { 'data-k': 'headers' }, (rec.headers || []).map(hd => h('div', {}, hd.key + ': ', hd.value ? hd.value.text : 'null')))));
  main.replaceChildren(
    h('h1', {}, h('a', { href: '#/topic/' + encodeURIComponent(name) }, name), ' / partition ', String(partition)),
    h('div', { class: 'bar' }, 'From offset', offset, 'or time', time, 'as', format, 'at most', limit,
      h('button', { class: 'primary', id: 'rec-read', onclick: () => {
        const p = new URLSearchParams({ format: format.value, limit: limit.value });
        if (offset.value !== '') p.set('offset', offset.value);
        if (time.value !== '') p.set('time', time.value);
        location.hash = `${base}?${p}`;
      } }, 'Read')),
    rows.length ? table(['Offset#', 'Timestamp', 'Key', 'Value', 'Headers'], rows) : h('p', { class: 'muted', id: 'no-records' }, 'No records there.'));
  return 0;
}

async function groupsPage(main, params) {
  const { r, controls } = await listing(params, 'groups', '#/groups');
  const rows = r.items.map(g => h('tr', { 'data-row': g.name },
    h('td', { 'data-k': 'name' }, h('a', { href: '#/group/' + encodeURIComponent(g.name) }, g.name)),
    text('state', g.state), cell('members', g.members), cell('lag', g.total_lag), text('error', g.error || '')));
  main.replaceChildren(h('h1', {}, 'Consumer groups'),
    ...controls('search groups'),
    table(['Group', 'State', 'Members#', 'Lag#', ''], rows));
  return 5000;
}

async function groupPage(main, params, name) {
  const { r: g, controls } = await listing(params, 'groups/' + encodeURIComponent(name), '#/group/' + encodeURIComponent(name));
  const members = g.members.map(m => h('tr', { 'data-row': m.id },
    text('id', m.id), text('client', m.client_id), text('host', m.host),
    text('assigned', Object.entries(m.assigned).sort().map(([t, ps]) => `${t}[${ps.sort((a, b) => a - b).join(' ')}]`).join(' ') || '-')));
  const lag = g.items.map(l => h('tr', { 'data-row': `${l.topic}/${l.partition}` },
    text('topic', l.topic), cell('partition', l.partition), cell('committed', l.committed), cell('log_end', l.log_end),
    cell('lag', l.lag), text('member', l.member || '-')));
  const kids = [h('h1', {}, 'Group ', h('span', { id: 'group-name' }, g.name)),
    h('div', { class: 'cards' },
      h('div', { class: 'card' }, h('b', { id: 'group-state' }, g.state), h('span', {}, 'state')),
      h('div', { class: 'card' }, h('b', { id: 'group-members', 'data-v': g.members.length }, num(g.members.length)), h('span', {}, 'members')),
      h('div', { class: 'card' }, h('b', { id: 'group-lag', 'data-v': g.total_lag }, num(g.total_lag)), h('span', {}, 'records behind'))),
    h('h2', {}, 'Lag over time'),
    h('p', { class: 'muted' }, 'Records after the committed offsets, summed over the committed partitions (unilog_group_lag_records on the coordinator; the total above also counts partitions with no commit from their log start).'),
    g.lag_tracked ? chart('lag of the committed partitions (records)', [g.lag_t, g.lag_v], ['lag'], Math.min(900, contentWidth(main) - 18))
      : h('p', { class: 'muted', id: 'lag-untracked' }, 'No history: the console keeps the lag of the first 2,000 groups it sees.'),
    h('h2', {}, 'Members'),
    members.length ? table(['Member', 'Client id', 'Host', 'Partitions'], members) : h('p', { class: 'muted' }, 'No members.'),
    h('h2', {}, 'Committed offsets and lag'),
    ...controls('topic/partition'),
    table(['Topic', 'Partition#', 'Committed#', 'Log end#', 'Lag#', 'Member'], lag)];
  if (state.write) {
    const topics = [...new Set(g.items.map(l => l.topic))];
    const topic = h('input', { id: 'reset-topic', value: topics[0] || '', placeholder: 'topic' });
    const to = h('input', { id: 'reset-to', value: 'earliest', placeholder: 'earliest, latest, offset or time' });
    kids.push(h('fieldset', {}, h('legend', {}, 'Change'), h('div', { class: 'bar' },
      'Reset offsets of', topic, 'to', to,
      h('button', { class: 'primary', id: 'reset-group', onclick: () => act(`Reset "${name}" on "${topic.value}" to ${to.value}? Refused while the group has members.`, null,
        () => change('POST', `groups/${encodeURIComponent(name)}/reset`, { topic: topic.value, to: to.value }),
        res => { route().then(() => document.getElementById('main').prepend(notice(`Reset ${res.reset.length} partitions.`))); }) }, 'Reset'),
      h('button', { class: 'danger', id: 'delete-group', onclick: () => act(`Delete group "${name}" and its committed offsets?`, name,
        () => change('DELETE', `groups/${encodeURIComponent(name)}`), () => { location.hash = '#/groups'; }) }, 'Delete group'))));
  }
  main.replaceChildren(...kids);
  return 5000;
}

async function metricsPage(main) {
  const s = await api('metrics');
  // Two charts a row: half the width less the gap, each less its padding.
  const w = Math.max(320, Math.floor((contentWidth(main) - 12) / 2) - 18);
  main.replaceChildren(h('h1', {}, 'Metrics'),
    h('p', { class: 'muted' }, 'This node, sampled every 2 s for the last 10 minutes from its /metrics.'),
    h('div', { class: 'charts' },
      chart('produce (bytes/s)', [s.t, s.produce_bytes], ['produce'], w),
      chart('fetch (bytes/s)', [s.t, s.fetch_bytes], ['fetch'], w),
      chart('records produced /s', [s.t, s.produce_records], ['records'], w),
      chart('requests /s', [s.t, s.requests], ['requests'], w),
      chart('p99 latency (ms)', [s.t, s.produce_p99_ms, s.fetch_p99_ms], ['Produce', 'Fetch (with its long poll)'], w),
      chart('connections', [s.t, s.connections], ['connections'], w)));
  return 2000;
}

// ---- routing ----

const routes = [
  [/^\/cluster$/, clusterPage, 'cluster'],
  [/^\/topics$/, topicsPage, 'topics'],
  [/^\/topic\/([^/]+)$/, topicPage, 'topics'],
  [/^\/topic\/([^/]+)\/(\d+)$/, partitionPage, 'topics'],
  [/^\/groups$/, groupsPage, 'groups'],
  [/^\/group\/([^/]+)$/, groupPage, 'groups'],
  [/^\/metrics$/, metricsPage, 'metrics'],
];

// route draws the page the hash names, then redraws it while it stays
// open (pages return their refresh period; 0 for none). A redraw keeps
// the search box's focus and the scroll position.
async function route() {
  clearTimeout(state.timer);
  const hash = location.hash.replace(/^#/, '') || '/cluster';
  const [path, query] = hash.split('?');
  const params = new URLSearchParams(query || '');
  const found = routes.find(([re]) => re.test(path)) || routes[0];
  const args = (path.match(found[0]) || []).slice(1).map(decodeURIComponent);
  document.querySelectorAll('[data-nav]').forEach(a => a.classList.toggle('active', a.dataset.nav === found[2]));
  const main = document.getElementById('main');
  const focused = document.activeElement && document.activeElement.id;
  const scroll = window.scrollY;
  let every = 0;
  try {
    state.charts.forEach(c => c.destroy());
    state.charts = [];
    every = await found[1](main, params, ...args);
    showError(null);
    main.dataset.loaded = hash;
  } catch (err) {
    showError(err);
    every = 5000;
  }
  if (focused === 'search') {
    const s = document.getElementById('search');
    if (s) { s.focus(); s.setSelectionRange(s.value.length, s.value.length); }
  }
  window.scrollTo(0, scroll);
  // Redraws pause while a dialog or a form field is in use.
  if (every) state.timer = setTimeout(function again() {
    const busy = document.getElementById('confirm').open || (document.activeElement && document.activeElement.matches('input:not(#search), select'));
    if (busy) state.timer = setTimeout(again, every); else route();
  }, every);
}

async function start() {
  try {
    const info = await api('info');
    state.write = info.write;
  } catch (err) { showError(err); }
  document.getElementById('mode').textContent = state.write ? 'changes allowed' : 'read-only';
  window.addEventListener('hashchange', route);
  route();
}

start();
