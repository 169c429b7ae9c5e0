/*
 * The counters dashboard: browse counters by prefix, see each one's value
 * and a chart of its history, and the prefix's summed history.
 *
 * Above them, the report a site owner reads, for a page or a prefix (a
 * site, a shop): hits and visitors over a period picked from presets
 * against the period before, the chart, and what the count was made of
 * (GET /v1/breakdown?prefix=&by=, /v1/counters/{name}/breakdown?by=): the
 * top pages, referrers, countries, browsers, systems, devices, sources and
 * campaigns of page hits, and any label of the user's choosing (a shop's
 * channel or region).
 *
 * Plain JavaScript and SVG, no library and no build step: the charts are
 * bars, which SVG draws in a few lines, and the page is served embedded in
 * the binary. Every number comes from the public HTTP API
 * (GET /v1/counters, /v1/counters/{name}/history, /v1/history).
 *
 * The API key is typed into the page and kept in sessionStorage (this tab
 * only, gone when it closes); it travels only in the Authorization header,
 * never in a URL. The query (prefix, step, zone, range) may come from the
 * page's own URL, so a view can be bookmarked without its key.
 *
 * With a prefix, the listed values update live from the prefix's stream
 * (GET /v1/events?prefix=...). It is read with fetch, since EventSource
 * cannot send the Authorization header, and reconnects as EventSource
 * does: after the stream's retry: delay, with Last-Event-ID.
 */
(function () {
  'use strict';

  var KEY = 'countersvc.dashboard.key';
  var $ = function (id) { return document.getElementById(id); };
  var selected = null;

  function apiKey() {
    try { return sessionStorage.getItem(KEY) || ''; } catch (e) { return ''; }
  }

  function showError(msg) { $('error').textContent = msg || ''; }

  // api fetches a JSON document of the API, with the key when there is one.
  function api(path) {
    var headers = { 'Accept': 'application/json' };
    var key = apiKey();
    if (key) headers['Authorization'] = 'Bearer ' + key;
    return fetch(path, { headers: headers, credentials: 'omit', cache: 'no-store' }).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (body) {
        if (!res.ok) {
          var msg = body && body.error ? body.error.message : res.statusText;
          throw new Error(res.status + ': ' + msg);
        }
        return body;
      });
    });
  }

  // watch reads the event stream at path until the next watch, calling
  // onEvent(type, data) for each event.
  var watching = null;
  function watch(path, onEvent) {
    if (watching) watching.abort();
    watching = null;
    if (!path || !window.AbortController || !window.TextDecoder) return;
    var ctl = new AbortController();
    watching = ctl;
    var lastId = '', retry = 2000;
    function connect() {
      if (ctl.signal.aborted) return;
      var headers = { 'Accept': 'text/event-stream' };
      var key = apiKey();
      if (key) headers['Authorization'] = 'Bearer ' + key;
      if (lastId) headers['Last-Event-ID'] = lastId;
      fetch(path, { headers: headers, credentials: 'omit', cache: 'no-store', signal: ctl.signal }).then(function (res) {
        if (!res.ok || !res.body) throw new Error('live updates: HTTP ' + res.status);
        var reader = res.body.getReader(), dec = new TextDecoder(), buf = '';
        function pump() {
          return reader.read().then(function (r) {
            if (r.done) return;
            buf += dec.decode(r.value, { stream: true });
            for (var i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
              var ev = { type: 'message', data: '' };
              buf.slice(0, i).split('\n').forEach(function (line) {
                var c = line.indexOf(':');
                if (c === 0) return; // a comment: the heartbeat
                var k = c < 0 ? line : line.slice(0, c), v = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
                if (k === 'id') lastId = v;
                else if (k === 'event') ev.type = v;
                else if (k === 'data') ev.data += v;
                else if (k === 'retry') retry = parseInt(v, 10) || retry;
              });
              buf = buf.slice(i + 2);
              if (ev.data) onEvent(ev.type, JSON.parse(ev.data));
            }
            return pump();
          });
        }
        return pump();
      }).catch(function (e) {
        if (!ctl.signal.aborted) showError(e.message);
      }).then(function () { setTimeout(connect, retry); });
    }
    connect();
  }

  function query() {
    var q = new URLSearchParams();
    q.set('step', $('step').value);
    if ($('tz').value.trim()) q.set('tz', $('tz').value.trim());
    if ($('from').value.trim()) q.set('from', $('from').value.trim());
    if ($('to').value.trim()) q.set('to', $('to').value.trim());
    return q;
  }

  var SVG = 'http://www.w3.org/2000/svg';
  function el(name, attrs, text) {
    var e = document.createElementNS(SVG, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function label(start, step) {
    // start is RFC 3339 with the zone's offset: its local part is the label.
    if (step === 'month') return start.slice(0, 7);
    if (step === 'hour') return start.slice(5, 10) + ' ' + start.slice(11, 16);
    return start.slice(0, 10);
  }

  // draw renders a series as bars, one per point, each carrying its start
  // and count as data attributes (the browser test reads them back).
  function draw(box, series) {
    box.textContent = '';
    var W = 800, H = 200, top = 10, bottom = 30, left = 50;
    var counts = series.points.map(function (p) { return p.count; });
    var max = Math.max.apply(null, counts.concat([0]));
    var min = Math.min.apply(null, counts.concat([0]));
    var span = max - min || 1;
    var y = function (v) { return top + (max - v) / span * (H - top - bottom); };
    var svg = el('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'data-total': series.total,
      'aria-label': 'history, total ' + series.total });
    var bw = (W - left) / Math.max(series.points.length, 1);
    svg.appendChild(el('text', { x: 4, y: y(max) + 4 }, String(max)));
    svg.appendChild(el('text', { x: 4, y: y(min) + 4 }, String(min)));
    svg.appendChild(el('line', { x1: left, x2: W, y1: y(0), y2: y(0), stroke: '#999' }));
    var every = Math.ceil(series.points.length / 8);
    series.points.forEach(function (p, i) {
      var x = left + i * bw;
      var r = el('rect', { 'class': 'bar' + (p.count < 0 ? ' negative' : ''), x: x + bw * 0.1, width: Math.max(bw * 0.8, 1),
        y: Math.min(y(p.count), y(0)), height: Math.abs(y(p.count) - y(0)), 'data-start': p.start, 'data-count': p.count });
      r.appendChild(el('title', {}, label(p.start, series.step) + ': ' + p.count));
      svg.appendChild(r);
      if (i % every === 0) svg.appendChild(el('text', { x: x, y: H - 10 }, label(p.start, series.step)));
    });
    var total = document.createElement('div');
    total.className = 'total';
    total.textContent = 'total ' + series.total + ' (' + series.step + 's in ' + series.tz + ')';
    box.appendChild(total);
    box.appendChild(svg);
  }

  function showCounter(name, row) {
    selected = name;
    Array.prototype.forEach.call(document.querySelectorAll('#counters tbody tr'), function (tr) {
      tr.classList.toggle('selected', tr === row);
    });
    $('counter-title').textContent = 'History of ' + name;
    return api('/v1/counters/' + encodeURIComponent(name) + '/history?' + query()).then(function (s) {
      draw($('counter-chart'), s);
    });
  }

  function load() {
    showError('');
    var prefix = $('prefix').value;
    var list = new URLSearchParams({ limit: '100' });
    if (prefix) list.set('prefix', prefix);
    var work = [api('/v1/counters?' + list).then(function (page) {
      var body = $('counters').tBodies[0];
      body.textContent = '';
      $('more').textContent = page.next_after ? '(first 100)' : '';
      var first = null, cells = {};
      page.counters.forEach(function (c) {
        var tr = document.createElement('tr');
        var name = document.createElement('td');
        name.textContent = c.name;
        var value = document.createElement('td');
        value.className = 'value';
        value.textContent = c.value.toLocaleString();
        cells[c.name] = value;
        tr.appendChild(name);
        tr.appendChild(value);
        tr.addEventListener('click', function () { showCounter(c.name, tr).catch(function (e) { showError(e.message); }); });
        body.appendChild(tr);
        if (!first || c.name === selected) first = { name: c.name, tr: tr };
      });
      watch(prefix && '/v1/events?prefix=' + encodeURIComponent(prefix), function (type, d) {
        var cell = cells[d.name];
        if (!cell) return;
        cell.textContent = type === 'deleted' ? 'deleted' : d.value.toLocaleString();
      });
      if (first) return showCounter(first.name, first.tr);
    })];
    if (prefix) {
      $('prefix-title').textContent = 'All counters under ' + prefix;
      work.push(api('/v1/history?prefix=' + encodeURIComponent(prefix) + '&' + query()).then(function (s) {
        draw($('prefix-chart'), s);
      }));
    } else {
      $('prefix-chart').textContent = 'Give a prefix to see its counters summed.';
    }
    work.push(report());
    return Promise.all(work).catch(function (e) { showError(e.message); });
  }

  // Periods. A preset is a range of whole local days (or months) in the
  // zone, as YYYY-MM-DD or YYYY-MM-01, which the API takes as local
  // midnight; prev is the period it is compared with: the one just before,
  // as long (this month: the same days of last month).
  function todayIn(tz) {
    var parts = {};
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit' })
        .formatToParts(new Date()).forEach(function (p) { parts[p.type] = p.value; });
    } catch (e) {
      var d = new Date();
      parts = { year: d.getFullYear(), month: d.getMonth() + 1, day: d.getDate() };
    }
    return { y: +parts.year, m: +parts.month, d: +parts.day };
  }

  function ymd(y, m, d) { return new Date(Date.UTC(y, m - 1, d)).toISOString().slice(0, 10); }
  function dayDiff(a, b) { return Math.round((Date.parse(b) - Date.parse(a)) / 864e5); }
  function addDays(s, n) { return new Date(Date.parse(s) + n * 864e5).toISOString().slice(0, 10); }

  var PERIODS = {
    today: { name: 'today', step: 'hour', range: function (t) { return [ymd(t.y, t.m, t.d), ymd(t.y, t.m, t.d + 1)]; } },
    yesterday: { name: 'yesterday', step: 'hour', range: function (t) { return [ymd(t.y, t.m, t.d - 1), ymd(t.y, t.m, t.d)]; } },
    '7d': { name: 'the last 7 days', step: 'day', range: function (t) { return [ymd(t.y, t.m, t.d - 6), ymd(t.y, t.m, t.d + 1)]; } },
    '30d': { name: 'the last 30 days', step: 'day', range: function (t) { return [ymd(t.y, t.m, t.d - 29), ymd(t.y, t.m, t.d + 1)]; } },
    'this-month': { name: 'this month', step: 'day', range: function (t) { return [ymd(t.y, t.m, 1), ymd(t.y, t.m + 1, 1)]; },
      prev: function (t) { var from = ymd(t.y, t.m - 1, 1), end = ymd(t.y, t.m, 1), to = addDays(from, t.d); return [from, to < end ? to : end]; } },
    'last-month': { name: 'last month', step: 'day', range: function (t) { return [ymd(t.y, t.m - 1, 1), ymd(t.y, t.m, 1)]; },
      prev: function (t) { return [ymd(t.y, t.m - 2, 1), ymd(t.y, t.m - 1, 1)]; } },
    year: { name: 'the last 12 months', step: 'month', range: function (t) { return [ymd(t.y, t.m - 11, 1), ymd(t.y, t.m + 1, 1)]; },
      prev: function (t) { return [ymd(t.y, t.m - 23, 1), ymd(t.y, t.m - 11, 1)]; } }
  };

  // period is what the report covers: the preset's range and step, or the
  // form's own from, to and step (custom), with the range before it when
  // both ends are whole days.
  function period() {
    var tz = $('tz').value.trim() || 'UTC';
    var p = PERIODS[$('period').value];
    if (!p) {
      var from = $('from').value.trim(), to = $('to').value.trim(), prev = null;
      if (/^\d{4}-\d{2}-\d{2}$/.test(from) && /^\d{4}-\d{2}-\d{2}$/.test(to)) {
        prev = [addDays(from, -dayDiff(from, to)), from];
      }
      return { name: (from || '…') + ' to ' + (to || 'now'), step: $('step').value, tz: tz, cur: [from, to], prev: prev };
    }
    var t = todayIn(tz), cur = p.range(t);
    var prevRange = p.prev ? p.prev(t) : [addDays(cur[0], -dayDiff(cur[0], cur[1])), cur[0]];
    return { name: p.name, step: p.step, tz: tz, cur: cur, prev: prevRange };
  }

  function rangeQuery(step, tz, r) {
    var q = new URLSearchParams({ step: step, tz: tz });
    if (r[0]) q.set('from', r[0]);
    if (r[1]) q.set('to', r[1]);
    return q;
  }

  // totals are a range's hits and visitors (the days' unique visitors,
  // summed: the API counts visitors per day).
  function totals(path, tz, r) {
    return api(path('history', rangeQuery('day', tz, r))).then(function (s) {
      var visitors = 0, known = false;
      s.points.forEach(function (p) { if (typeof p.visitors === 'number') { visitors += p.visitors; known = true; } });
      return { hits: s.total, visitors: known ? visitors : null };
    });
  }

  // delta says how cur compares with prev: "+12%", "−5%", "new", "±0%".
  function delta(cur, prev) {
    if (cur === null || prev === null || prev === undefined) return { text: '', cls: '' };
    if (prev === 0) return cur === 0 ? { text: '±0% vs the period before', cls: '' } : { text: 'new (0 the period before)', cls: 'up' };
    var pct = Math.round((cur - prev) / Math.abs(prev) * 100);
    if (pct === 0) return { text: '±0% vs the period before', cls: '' };
    return { text: (pct > 0 ? '+' : '\u2212') + Math.abs(pct) + '% vs the period before (' + prev.toLocaleString() + ')', cls: pct > 0 ? 'up' : 'down' };
  }

  function card(id, cur, prev) {
    var box = $(id);
    var fig = box.querySelector('.figure');
    fig.textContent = cur === null ? '–' : cur.toLocaleString();
    fig.setAttribute('data-value', cur === null ? '' : String(cur));
    var d = delta(cur, prev), el = box.querySelector('.delta');
    el.textContent = d.text;
    el.className = 'delta ' + d.cls;
    el.setAttribute('data-previous', prev === null || prev === undefined ? '' : String(prev));
  }

  // breakdownTable fills a breakdown's table: value, count and share of
  // the total, each row carrying its value and count as data attributes
  // (the browser test reads them back), and the rows left out.
  function breakdownTable(table, b) {
    table.textContent = '';
    var body = document.createElement('tbody');
    table.appendChild(body);
    table.setAttribute('data-total', String(b.total));
    function row(cls, cells) {
      var tr = document.createElement('tr');
      if (cls) tr.className = cls;
      cells.forEach(function (c) {
        var td = document.createElement('td');
        td.className = c[0];
        td.textContent = c[1];
        tr.appendChild(td);
      });
      body.appendChild(tr);
      return tr;
    }
    if (!b.rows.length) row('empty', [['label', 'nothing in this period']]);
    b.rows.forEach(function (r) {
      var share = b.total ? Math.round(r.count / b.total * 1000) / 10 + '%' : '';
      var tr = row('', [['label', r.value], ['count', r.count.toLocaleString()], ['share', share]]);
      tr.setAttribute('data-value', r.value);
      tr.setAttribute('data-count', String(r.count));
    });
    if (b.more) row('more', [['label', 'the rest'], ['count', b.more.toLocaleString()], ['share', '']]);
  }

  function breakdownError(table, msg) {
    table.textContent = '';
    var tr = table.insertRow(), td = tr.insertCell();
    tr.className = 'error';
    td.textContent = msg;
  }

  // Label keys the user has broken a prefix down by, offered again.
  var LABELS = 'countersvc.dashboard.labels';
  function knownLabels() {
    try { return JSON.parse(localStorage.getItem(LABELS) || '[]'); } catch (e) { return []; }
  }
  function rememberLabel(key) {
    var keys = knownLabels().filter(function (k) { return k !== key; });
    keys.unshift(key);
    try { localStorage.setItem(LABELS, JSON.stringify(keys.slice(0, 20))); } catch (e) { /* not kept */ }
    offerLabels();
  }
  function offerLabels() {
    var list = $('label-keys');
    list.textContent = '';
    var seen = {};
    knownLabels().concat(['channel', 'region', 'referrer', 'country', 'browser', 'os', 'device', 'source', 'medium', 'campaign'])
      .forEach(function (k) {
        if (seen[k]) return;
        seen[k] = true;
        var o = document.createElement('option');
        o.value = k;
        list.appendChild(o);
      });
  }

  var BREAKDOWNS = ['name', 'referrer', 'country', 'browser', 'os', 'device', 'source', 'campaign'];

  function breakdown(path, by, r, tz, table) {
    var q = rangeQuery('day', tz, r);
    q.delete('step');
    q.set('by', by);
    q.set('limit', '10');
    return api(path('breakdown', q)).then(function (b) { breakdownTable(table, b); }, function (e) { breakdownError(table, e.message); });
  }

  // report draws the report of the page (the Page field) or else of the
  // prefix; without either there is none. A breakdown that fails says so
  // in its own table; the rest of the report stands.
  function report() {
    var page = $('page').value.trim(), prefix = $('prefix').value;
    var box = $('report');
    if (!page && !prefix) { box.hidden = true; return Promise.resolve(); }
    box.hidden = false;
    var p = period();
    function path(what, q) {
      if (page) return '/v1/counters/' + encodeURIComponent(page) + '/' + what + '?' + q;
      return '/v1/' + what + '?prefix=' + encodeURIComponent(prefix) + '&' + q;
    }
    $('report-title').textContent = (page || prefix) + ': ' + p.name + ' (' + p.tz + ')';
    var work = [];
    work.push(Promise.all([totals(path, p.tz, p.cur), p.prev ? totals(path, p.tz, p.prev) : null]).then(function (t) {
      var cur = t[0], prev = t[1] || { hits: null, visitors: null };
      card('hits-card', cur.hits, prev.hits);
      card('visitors-card', cur.visitors, prev.visitors);
    }));
    work.push(api(path('history', rangeQuery(p.step, p.tz, p.cur))).then(function (s) { draw($('report-chart'), s); }));
    $('bd-name').hidden = !!page;
    BREAKDOWNS.forEach(function (by) {
      if (by === 'name' && page) return;
      work.push(breakdown(path, by, p.cur, p.tz, document.querySelector('#bd-' + by + ' table')));
    });
    var key = $('label-key').value.trim();
    var custom = document.querySelector('#bd-custom table');
    if (key) {
      work.push(breakdown(path, key, p.cur, p.tz, custom).then(function () { rememberLabel(key); }));
    } else {
      custom.textContent = '';
    }
    return Promise.all(work);
  }

  function keyState() {
    $('key-state').textContent = apiKey() ? 'key set for this tab' : 'no key (works from loopback without COUNTERS_API_TOKEN)';
  }

  document.addEventListener('DOMContentLoaded', function () {
    var params = new URLSearchParams(location.search);
    ['prefix', 'page', 'step', 'tz', 'from', 'to'].forEach(function (k) { if (params.has(k)) $(k).value = params.get(k); });
    if (params.has('label')) $('label-key').value = params.get('label');
    // A link with its own range is a custom period; else a preset's.
    if (params.has('period') && (PERIODS[params.get('period')] || params.get('period') === 'custom')) {
      $('period').value = params.get('period');
    } else if (params.has('from') || params.has('to')) {
      $('period').value = 'custom';
    }
    offerLabels();
    if (!$('tz').value) {
      try { $('tz').value = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'; } catch (e) { $('tz').value = 'UTC'; }
    }
    $('key-form').addEventListener('submit', function (ev) {
      ev.preventDefault();
      try { sessionStorage.setItem(KEY, $('key').value.trim()); } catch (e) { showError('This browser keeps no sessionStorage.'); }
      $('key').value = '';
      keyState();
      load();
    });
    $('forget').addEventListener('click', function () {
      try { sessionStorage.removeItem(KEY); } catch (e) { /* nothing kept */ }
      keyState();
    });
    $('query').addEventListener('submit', function (ev) { ev.preventDefault(); load(); });
    // A preset fills in the range and step it stands for, so that the
    // counters' charts below show the same period.
    function applyPeriod() {
      if ($('period').value === 'custom') return;
      var p = period();
      $('from').value = p.cur[0];
      $('to').value = p.cur[1];
      $('step').value = p.step;
    }
    $('period').addEventListener('change', function () { applyPeriod(); load(); });
    $('label-key').addEventListener('change', function () { load(); });
    applyPeriod();
    keyState();
    load();
  });
})();
