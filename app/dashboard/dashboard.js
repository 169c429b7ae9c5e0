/*
 * The counters dashboard. Its first page (no prefix, no page) lists every
 * site and shop the key may read (the top-level prefixes under its own,
 * found by GET /v1/me and a skip scan of GET /v1/counters), each with
 * today's count, the period's against the period before, and a sparkline
 * of its days; a click opens today's view of that prefix. The same page
 * holds the switch that keeps this browser's own visits out of the count
 * (the snippet's counters:ignore flag, docs/page-hits.md).
 *
 * With a prefix: browse its counters, see each one's value and a chart of
 * its history, and the prefix's summed history.
 *
 * Above them, the report a site owner reads, for a page or a prefix (a
 * site, a shop): hits and visitors over a period picked from presets
 * against the period before, the chart, and what the count was made of
 * (GET /v1/breakdown?prefix=&by=, /v1/counters/{name}/breakdown?by=): the
 * top pages, referrers, countries, browsers, systems, devices, sources and
 * campaigns of page hits, and any label of the user's choosing (a shop's
 * channel or region). What fits the prefix: a site (a prefix under the
 * public prefixes) gets the page-hit panels, a shop its top counters and
 * the labels its owner asked for before, never a panel of "(none) 100%".
 * The charts draw the annotations of their range (markers, the text on
 * hover), and each view has a "download CSV" of the same query.
 *
 * Plain JavaScript and SVG, no library and no build step: the charts are
 * bars, which SVG draws in a few lines, and the page is served embedded in
 * the binary. Every number comes from the public HTTP API
 * (GET /v1/counters, /v1/counters/{name}/history, /v1/history).
 *
 * The API key is typed into the page and kept in sessionStorage (this tab
 * only, gone when it closes); it travels only in the Authorization header,
 * never in a URL: a CSV is fetched with it and saved from a Blob. Every
 * view first asks GET /v1/me, so that a missing or refused key is one
 * sign-in message, not an error per request. The query (prefix, step,
 * zone, range) may come from the page's own URL, so a view can be
 * bookmarked without its key.
 *
 * With a prefix, the listed values update live from the prefix's stream
 * (GET /v1/events?prefix=...). It is read with fetch, since EventSource
 * cannot send the Authorization header, and reconnects as EventSource
 * does: after the stream's retry: delay, with Last-Event-ID.
 */
(function () {
  'use strict';

  var KEY = 'countersvc.dashboard.key';
  // IGNORE is the snippet's opt-out flag (app/snippet.js): "true" in a
  // browser's localStorage for a site keeps that browser's visits uncounted.
  var IGNORE = 'counters:ignore';
  var $ = function (id) { return document.getElementById(id); };
  var selected = null;

  function apiKey() {
    try { return sessionStorage.getItem(KEY) || ''; } catch (e) { return ''; }
  }

  // showError shows each distinct message once, however many requests
  // failed with it; showError('') clears them.
  var errors = [];
  function showError(msg) {
    if (!msg) errors = [];
    else if (errors.indexOf(msg) < 0) errors.push(msg);
    $('error').textContent = errors.join(' \u2014 ');
  }

  function authHeaders(accept) {
    var headers = { 'Accept': accept };
    var key = apiKey();
    if (key) headers['Authorization'] = 'Bearer ' + key;
    return headers;
  }

  // api fetches a JSON document of the API, with the key when there is
  // one. A failure is an Error with the answer's status.
  function api(path) {
    return fetch(path, { headers: authHeaders('application/json'), credentials: 'omit', cache: 'no-store' }).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (body) {
        if (!res.ok) {
          var err = new Error(res.status + ': ' + (body && body.error ? body.error.message : res.statusText));
          err.status = res.status;
          throw err;
        }
        return body;
      });
    });
  }

  // Who the key is (GET /v1/me), asked once per key. A 401 or 403 here is
  // the one sign-in message, and nothing else is asked.
  var me = null;
  function whoami() {
    if (me) return Promise.resolve(me);
    return api('/v1/me').then(function (m) {
      me = m;
      $('signin').hidden = true;
      return m;
    }, function (e) {
      if (e.status !== 401 && e.status !== 403) throw e;
      var box = $('signin');
      box.hidden = false;
      if (e.status === 403) {
        box.textContent = 'This key may not read counters (it lacks the read scope): type a key with the read scope above and press "Use key".';
      } else if (apiKey()) {
        box.textContent = 'The key was refused (unknown, revoked or expired): type the admin token or another key above and press "Use key".';
      } else {
        box.textContent = 'Sign in: this service needs an API key. Type the admin token (COUNTERS_API_TOKEN) or a key with the read scope (ck_…) above and press "Use key". It stays in this tab only.';
      }
      $('glance').hidden = true;
      $('view').hidden = true;
      $('key').focus();
      return null;
    });
  }

  // isSite reports whether name (a counter or a prefix) is page hits':
  // under one of the public prefixes.
  function isSite(name) {
    return !!me && me.public_prefixes.some(function (p) { return name.slice(0, p.length) === p; });
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
      var headers = authHeaders('text/event-stream');
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

  // pointAt is the index of the point whose period holds the time at
  // (RFC 3339), or -1 outside the series.
  function pointAt(series, at) {
    var t = Date.parse(at), i = -1;
    if (isNaN(t) || t < Date.parse(series.from) || t >= Date.parse(series.to)) return -1;
    series.points.forEach(function (p, j) { if (Date.parse(p.start) <= t) i = j; });
    return i;
  }

  // draw renders a series as bars, one per point, each carrying its start
  // and count as data attributes (the browser test reads them back), and
  // its annotations (when the answer has them) as markers over the bar of
  // their moment, the text on hover and listed under the chart.
  function draw(box, series) {
    box.textContent = '';
    var W = 800, H = 200, top = 14, bottom = 30, left = 50;
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
    var notes = document.createElement('ul');
    notes.className = 'annotations';
    (series.annotations || []).forEach(function (a) {
      var i = pointAt(series, a.at);
      if (i < 0) return;
      var li = document.createElement('li');
      li.textContent = label(a.at, series.step === 'month' ? 'day' : series.step) + ' ' + a.text;
      notes.appendChild(li);
      var x = left + (i + 0.5) * bw;
      var g = el('g', { 'class': 'annotation', tabindex: '0', 'data-at': a.at, 'data-text': a.text });
      g.appendChild(el('title', {}, label(a.at, series.step === 'month' ? 'day' : series.step) + ': ' + a.text));
      g.appendChild(el('line', { x1: x, x2: x, y1: top - 8, y2: H - bottom }));
      g.appendChild(el('circle', { cx: x, cy: top - 7, r: 6 }));
      svg.appendChild(g);
    });
    var total = document.createElement('div');
    total.className = 'total';
    total.textContent = 'total ' + series.total + ' (' + series.step + 's in ' + series.tz + ')';
    box.appendChild(total);
    box.appendChild(svg);
    if (notes.firstChild) box.appendChild(notes);
  }

  // Each chart asks for the annotations of its range; a service without
  // them answers the series alone, and the chart simply has none.
  function withAnnotations(path) { return path + (path.indexOf('?') < 0 ? '?' : '&') + 'annotations=true'; }

  // csvLink points a (the "download CSV" link of a view) at the same
  // query as CSV, to be saved as file.
  function csvLink(a, path, file) {
    a.hidden = false;
    a.href = path + (path.indexOf('?') < 0 ? '?' : '&') + 'format=csv';
    a.setAttribute('download', file);
  }

  // download saves the CSV a link points at: fetched with the key (a link
  // cannot send the Authorization header) and saved from a Blob.
  function download(a) {
    fetch(a.href, { headers: authHeaders('text/csv'), credentials: 'omit', cache: 'no-store' }).then(function (res) {
      var type = res.headers.get('Content-Type') || '';
      if (!res.ok) {
        return res.json().catch(function () { return {}; }).then(function (body) {
          throw new Error('CSV: ' + res.status + ': ' + (body && body.error ? body.error.message : res.statusText));
        });
      }
      if (type.indexOf('text/csv') !== 0) throw new Error('CSV: this service does not answer CSV (it sent ' + (type || 'nothing') + ')');
      return res.blob();
    }).then(function (blob) {
      var url = URL.createObjectURL(blob), save = document.createElement('a');
      save.href = url;
      save.download = a.getAttribute('download') || 'counters.csv';
      document.body.appendChild(save);
      save.click();
      save.remove();
      setTimeout(function () { URL.revokeObjectURL(url); }, 10000);
    }).catch(function (e) { showError(e.message); });
  }

  // fileName makes a CSV's file name of what it shows.
  function fileName(parts) {
    return parts.filter(Boolean).join('-').replace(/[^A-Za-z0-9._-]+/g, '_').replace(/_+$/, '') + '.csv';
  }

  function showCounter(name, row) {
    selected = name;
    Array.prototype.forEach.call(document.querySelectorAll('#counters tbody tr'), function (tr) {
      tr.classList.toggle('selected', tr === row);
    });
    $('counter-title').textContent = 'History of ' + name;
    return api(withAnnotations('/v1/counters/' + encodeURIComponent(name) + '/history?' + query())).then(function (s) {
      draw($('counter-chart'), s);
    });
  }

  // isReserved: the service's own counters (_tickets/...), shown only
  // when asked for by their prefix.
  function isReserved(name) { return name.charAt(0) === '_'; }

  // load shows what the form asks: the first page without a prefix or a
  // page, else the view of one. Once it is drawn the page is marked
  // data-ready (the browser tests wait for it).
  var loads = 0;
  function load() {
    var n = ++loads;
    document.documentElement.removeAttribute('data-ready');
    showError('');
    var prefix = $('prefix').value, page = $('page').value.trim();
    return whoami().then(function (m) {
      if (!m) return;
      $('glance').hidden = !!(prefix || page);
      $('view').hidden = !(prefix || page);
      if (watching) watching.abort();
      if (!prefix && !page) return glance(m);
      return view(prefix);
    }).catch(function (e) { showError(e.message); }).then(function () {
      if (n === loads) document.documentElement.setAttribute('data-ready', String(n));
    });
  }

  function view(prefix) {
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
        // The first counter is charted, never a reserved one unless the
        // prefix asks for them.
        if (isReserved(c.name) && !isReserved(prefix)) return;
        if (!first || c.name === selected) first = { name: c.name, tr: tr };
      });
      watch(prefix && '/v1/events?prefix=' + encodeURIComponent(prefix), function (type, d) {
        var cell = cells[d.name];
        if (!cell) return;
        cell.textContent = type === 'deleted' ? 'deleted' : d.value.toLocaleString();
      });
      if (first) return showCounter(first.name, first.tr);
      $('counter-chart').textContent = '';
    })];
    if (prefix) {
      $('prefix-title').textContent = 'All counters under ' + prefix;
      work.push(api(withAnnotations('/v1/history?prefix=' + encodeURIComponent(prefix) + '&' + query())).then(function (s) {
        draw($('prefix-chart'), s);
      }));
    } else {
      $('prefix-chart').textContent = 'Give a prefix to see its counters summed.';
    }
    work.push(report());
    return Promise.all(work);
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

  // period is what the report covers: the preset's range and step (the
  // form's, or the one named), or the form's own from, to and step
  // (custom), with the range before it when both ends are whole days.
  function period(preset) {
    var tz = $('tz').value.trim() || 'UTC';
    var t = todayIn(tz), today = ymd(t.y, t.m, t.d);
    var p = PERIODS[preset || $('period').value];
    if (!p) {
      var from = $('from').value.trim(), to = $('to').value.trim(), prev = null;
      if (isDay(from) && isDay(to)) prev = [addDays(from, -dayDiff(from, to)), from];
      return { name: (from || '…') + ' to ' + (to || 'now'), step: $('step').value, tz: tz, cur: [from, to], prev: prev, today: today };
    }
    var cur = p.range(t);
    var prevRange = p.prev ? p.prev(t) : [addDays(cur[0], -dayDiff(cur[0], cur[1])), cur[0]];
    return { name: p.name, step: p.step, tz: tz, cur: cur, prev: prevRange, today: today };
  }

  function isDay(s) { return /^\d{4}-\d{2}-\d{2}$/.test(s); }

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

  function card(id, what, cur, prev) {
    var box = $(id);
    box.querySelector('.what').firstChild.textContent = what + ' ';
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

  // Label keys the user has broken a prefix down by, offered again, and
  // per prefix (or page) the ones asked for there: a shop's own panels.
  var LABELS = 'countersvc.dashboard.labels';
  var LABELS_OF = 'countersvc.dashboard.labels-of';
  function stored(key, empty) {
    try { return JSON.parse(localStorage.getItem(key) || empty); } catch (e) { return JSON.parse(empty); }
  }
  function store(key, v) {
    try { localStorage.setItem(key, JSON.stringify(v)); } catch (e) { /* not kept */ }
  }
  function knownLabels() { return stored(LABELS, '[]'); }
  function labelsOf(target) { return stored(LABELS_OF, '{}')[target] || []; }
  function rememberLabel(target, key) {
    store(LABELS, [key].concat(knownLabels().filter(function (k) { return k !== key; })).slice(0, 20));
    var of = stored(LABELS_OF, '{}'), keys = of[target] || [];
    if (keys.indexOf(key) < 0) {
      of[target] = keys.concat([key]).slice(-8);
      store(LABELS_OF, of);
    }
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

  var HIT_BREAKDOWNS = ['name', 'referrer', 'country', 'browser', 'os', 'device', 'source', 'campaign'];

  function breakdown(path, by, r, tz, section, file) {
    var q = rangeQuery('day', tz, r);
    q.delete('step');
    q.set('by', by);
    q.set('limit', '10');
    var table = section.querySelector('table');
    csvLink(section.querySelector('a.csv'), path('breakdown', q), fileName(file.concat([by])));
    return api(path('breakdown', q)).then(function (b) { breakdownTable(table, b); }, function (e) { breakdownError(table, e.message); });
  }

  // labelPanel is the breakdown section of a label the owner asked for
  // before on this prefix (a shop's channel, region).
  function labelPanel(key) {
    var s = document.createElement('section');
    s.className = 'breakdown';
    s.id = 'bd-label-' + key;
    var h = document.createElement('h3'), t = document.createElement('span'), a = document.createElement('a');
    t.className = 'title';
    t.textContent = 'By ' + key;
    a.className = 'csv';
    a.textContent = 'CSV';
    a.href = '#';
    h.appendChild(t);
    h.appendChild(document.createTextNode(' '));
    h.appendChild(a);
    s.appendChild(h);
    s.appendChild(document.createElement('table'));
    $('bd-labels').appendChild(s);
    return s;
  }

  // countryCredit is the credit the countries' database asks for, by its
  // type: MaxMind's GeoLite2 or GeoIP2, else DB-IP's (what scripts/geoip
  // fetches); none without a database, whose countries are all unknown.
  function countryCredit(box) {
    var db = me && me.country_database;
    box.hidden = !db;
    box.textContent = '';
    if (!db) return;
    var a = document.createElement('a');
    a.rel = 'noopener';
    if (/^Geo(Lite|IP)/i.test(db)) {
      box.appendChild(document.createTextNode('This product includes GeoLite2 data created by MaxMind, available from '));
      a.href = 'https://www.maxmind.com';
      a.textContent = 'maxmind.com';
    } else {
      box.appendChild(document.createTextNode('IP Geolocation by '));
      a.href = 'https://db-ip.com';
      a.textContent = 'DB-IP';
    }
    box.appendChild(a);
  }

  // report draws the report of the page (the Page field) or else of the
  // prefix, with the panels that fit it: a site's page-hit panels, a
  // shop's top counters and its own labels. When its count cannot be read
  // (a key outside the prefix), that one error is shown and nothing else
  // is asked.
  function report() {
    var page = $('page').value.trim(), prefix = $('prefix').value;
    var box = $('report');
    if (!page && !prefix) { box.hidden = true; return Promise.resolve(); }
    var p = period(), target = page || prefix, site = isSite(target);
    function path(what, q) {
      if (page) return '/v1/counters/' + encodeURIComponent(page) + '/' + what + '?' + q;
      return '/v1/' + what + '?prefix=' + encodeURIComponent(prefix) + '&' + q;
    }
    var file = [target, p.name];
    $('report-title').textContent = target + ': ' + p.name + ' (' + p.tz + ')';
    box.classList.toggle('site', site);
    box.classList.toggle('shop', !site);
    var chart = path('history', rangeQuery(p.step, p.tz, p.cur));
    csvLink($('report-csv'), chart, fileName(file));
    return Promise.all([totals(path, p.tz, p.cur), p.prev ? totals(path, p.tz, p.prev) : null]).then(function (t) {
      box.hidden = false;
      var cur = t[0], prev = t[1] || { hits: null, visitors: null };
      card('hits-card', site ? 'Hits' : 'Count', cur.hits, prev.hits);
      $('visitors-card').hidden = !site;
      if (site) card('visitors-card', 'Visitors', cur.visitors, prev.visitors);
      var work = [api(withAnnotations(chart)).then(function (s) { draw($('report-chart'), s); })];
      $('bd-name').hidden = !!page;
      $('bd-name').querySelector('.title').textContent = site ? 'Top pages' : 'Top counters';
      countryCredit(document.querySelector('#bd-country .credit'));
      HIT_BREAKDOWNS.forEach(function (by) {
        var section = $('bd-' + by);
        if (by !== 'name') section.hidden = !site;
        if (section.hidden) return;
        work.push(breakdown(path, by, p.cur, p.tz, section, file));
      });
      var key = $('label-key').value.trim();
      $('bd-labels').textContent = '';
      if (!site) {
        labelsOf(target).forEach(function (k) {
          if (k !== key) work.push(breakdown(path, k, p.cur, p.tz, labelPanel(k), file));
        });
      }
      var custom = $('bd-custom');
      if (key) {
        work.push(breakdown(path, key, p.cur, p.tz, custom, file).then(function () { rememberLabel(target, key); }));
      } else {
        custom.querySelector('table').textContent = '';
        custom.querySelector('a.csv').hidden = true;
      }
      return Promise.all(work);
    }, function (e) {
      box.hidden = true;
      throw e;
    });
  }

  // The first page: every site and shop the key may read.

  // groupOf is the site or shop a counter name belongs to: under a public
  // prefix, that prefix and the name's next segment (hits/blog.example.org/);
  // elsewhere its first segment (shop/). A name without a further "/" is
  // its own group.
  function groupOf(name) {
    var i = name.indexOf('/', groupBase(name).length);
    return i < 0 ? name : name.slice(0, i + 1);
  }

  // groupBase is the longest public prefix that name is under, or "".
  function groupBase(name) {
    var base = '';
    me.public_prefixes.forEach(function (p) { if (name.slice(0, p.length) === p && p.length > base.length) base = p; });
    return base;
  }

  // LAST sorts after every name that starts with what it follows: names
  // are ordered by their UTF-8 bytes, and U+10FFFF's are the highest.
  var LAST = '\uDBFF\uDFFF';
  var MAX_SITES = 50;

  // sites finds the top-level prefixes under the key's own: a key's prefix
  // is a site or shop itself, unless it is "" or holds a public prefix,
  // which are scanned: one list request of one counter per group found,
  // each starting after the group before it (a skip scan), so a site of a
  // million pages costs one request.
  function sites(m) {
    var found = [], seen = {};
    function add(g) {
      if (seen[g] || isReserved(g)) return;
      seen[g] = true;
      found.push(g);
    }
    function scan(root, after) {
      if (found.length >= MAX_SITES) return Promise.resolve(true);
      var q = new URLSearchParams({ limit: '1' });
      if (root) q.set('prefix', root);
      if (after) q.set('after', after);
      return api('/v1/counters?' + q).then(function (page) {
        if (!page.counters.length) return false;
        var name = page.counters[0].name, g = groupOf(name);
        add(g);
        return scan(root, g.slice(-1) === '/' ? g + LAST : name);
      });
    }
    var chain = Promise.resolve(false);
    m.prefixes.forEach(function (root) {
      var holdsPublic = m.public_prefixes.some(function (p) { return p.slice(0, root.length) === root; });
      if (root && !holdsPublic) { add(root); return; }
      chain = chain.then(function (more) { return more || scan(root, ''); });
    });
    return chain.then(function (more) { return { sites: found.slice(0, MAX_SITES), more: !!more || found.length > MAX_SITES }; });
  }

  // sparkline draws counts as a small bar chart, inline SVG.
  function sparkline(points) {
    var W = 150, H = 28, max = Math.max.apply(null, points.map(function (p) { return p.count; }).concat([1]));
    var svg = el('svg', { 'class': 'spark', viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, role: 'img',
      'aria-label': points.length + ' days, ' + points.reduce(function (s, p) { return s + p.count; }, 0) + ' in all' });
    var bw = W / Math.max(points.length, 1);
    points.forEach(function (p, i) {
      var h = Math.max(p.count, 0) / max * (H - 2);
      var r = el('rect', { x: i * bw + bw * 0.1, width: Math.max(bw * 0.8, 1), y: H - h, height: h });
      r.appendChild(el('title', {}, p.start.slice(0, 10) + ': ' + p.count));
      svg.appendChild(r);
    });
    return svg;
  }

  // sumIn adds the counts of the days in [r[0], r[1]) (YYYY-MM-DD).
  function sumIn(points, r) {
    return points.reduce(function (s, p) { var d = p.start.slice(0, 10); return d >= r[0] && d < r[1] ? s + p.count : s; }, 0);
  }

  // glanceRange is what the first page compares: the period's days
  // against the days before, and today; one-day periods are compared so
  // too, with the last 7 days in the sparkline. A custom range that is not
  // whole days is the last 30 days'.
  function glanceRange() {
    var p = period();
    if (!p.prev) p = period('30d');
    var spark = dayDiff(p.cur[0], p.cur[1]) < 7 ? [addDays(p.cur[1], -7), p.cur[1]] : p.cur;
    var from = [p.prev[0], spark[0], p.today].sort()[0], to = [p.cur[1], addDays(p.today, 1)].sort()[1];
    return { p: p, today: p.today, spark: spark, from: from, to: to };
  }

  function glance(m) {
    var g = glanceRange();
    $('glance-period').textContent = g.p.name;
    var body = $('glance-table').tBodies[0];
    body.textContent = '';
    $('glance-note').textContent = 'Looking for sites and shops…';
    ownVisits();
    return sites(m).then(function (found) {
      $('glance-note').textContent = !found.sites.length ? 'No counters yet under this key\u2019s prefixes (' + m.prefixes.map(function (p) { return p || '(every name)'; }).join(', ') + ').'
        : found.more ? 'The first ' + MAX_SITES + ' sites and shops; give a prefix above to see others.' : '';
      ignoreLinks(found.sites);
      return Promise.all(found.sites.map(function (prefix) {
        var tr = glanceRow(body, prefix);
        var q = rangeQuery('day', g.p.tz, [g.from, g.to]);
        return api('/v1/history?prefix=' + encodeURIComponent(prefix) + '&' + q).then(function (s) {
          fillRow(tr, s.points, g);
        }, function (e) {
          tr.cells[1].textContent = e.message;
          tr.cells[1].colSpan = 4;
          while (tr.cells.length > 2) tr.deleteCell(2);
        });
      }));
    });
  }

  function glanceRow(body, prefix) {
    var tr = body.insertRow();
    tr.setAttribute('data-prefix', prefix);
    var q = new URLSearchParams({ prefix: prefix, period: 'today', tz: $('tz').value.trim() || 'UTC' });
    var a = document.createElement('a');
    a.href = '/dashboard?' + q;
    a.textContent = prefix;
    var name = tr.insertCell();
    name.appendChild(a);
    var kind = document.createElement('small');
    kind.className = 'kind';
    kind.textContent = isSite(prefix) ? ' site' : '';
    name.appendChild(kind);
    for (var i = 0; i < 4; i++) tr.insertCell().className = i < 3 ? 'value' : 'trend';
    tr.cells[1].textContent = '…';
    // The whole row opens today's view of the prefix.
    tr.addEventListener('click', function (ev) { if (ev.target !== a) location.href = a.href; });
    return tr;
  }

  function fillRow(tr, points, g) {
    var today = sumIn(points, [g.today, addDays(g.today, 1)]);
    var cur = sumIn(points, g.p.cur), prev = sumIn(points, g.p.prev);
    tr.setAttribute('data-today', String(today));
    tr.setAttribute('data-total', String(cur));
    tr.setAttribute('data-previous', String(prev));
    tr.cells[1].textContent = today.toLocaleString();
    tr.cells[2].textContent = cur.toLocaleString();
    var d = delta(cur, prev);
    tr.cells[3].textContent = d.text.replace(' vs the period before', '');
    tr.cells[3].className = 'value delta ' + d.cls;
    tr.cells[4].textContent = '';
    tr.cells[4].appendChild(sparkline(points.filter(function (p) {
      var day = p.start.slice(0, 10);
      return day >= g.spark[0] && day < g.spark[1];
    })));
  }

  // Own visits. The switch sets or clears the flag for this origin; the
  // links open each site found whose name holds its host (the snippet's
  // default names, hits/HOST/PATH) with the fragment that sets it there.
  function ownVisits() {
    $('ignore-origin').textContent = location.origin;
    var on = false;
    try { on = localStorage.getItem(IGNORE) === 'true'; } catch (e) { /* no storage: counted */ }
    $('ignore-switch').checked = on;
  }

  function ignoreLinks(found) {
    var list = $('ignore-links');
    list.textContent = '';
    found.forEach(function (prefix) {
      if (!isSite(prefix)) return;
      var host = prefix.slice(groupBase(prefix).length).replace(/\/$/, '');
      if (!/^[A-Za-z0-9.-]+(:\d+)?$/.test(host) || host.indexOf('.') < 0 && host.indexOf(':') < 0) return;
      var li = document.createElement('li');
      [['true', 'do not count my visits to ' + host], ['false', 'count them again']].forEach(function (v, i) {
        var a = document.createElement('a');
        a.href = '//' + host + '/#' + IGNORE + '=' + v[0];
        a.target = '_blank';
        a.rel = 'noopener';
        a.textContent = v[1];
        if (i) li.appendChild(document.createTextNode(' \u00b7 '));
        li.appendChild(a);
      });
      list.appendChild(li);
    });
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
      me = null;
      keyState();
      load();
    });
    $('forget').addEventListener('click', function () {
      try { sessionStorage.removeItem(KEY); } catch (e) { /* nothing kept */ }
      me = null;
      keyState();
    });
    $('query').addEventListener('submit', function (ev) { ev.preventDefault(); load(); });
    $('ignore-switch').addEventListener('change', function () {
      try {
        if ($('ignore-switch').checked) localStorage.setItem(IGNORE, 'true');
        else localStorage.removeItem(IGNORE);
      } catch (e) { showError('This browser keeps no localStorage: its visits are counted.'); }
      ownVisits();
    });
    Array.prototype.forEach.call(document.querySelectorAll('a.csv'), function (a) {
      a.addEventListener('click', function (ev) { ev.preventDefault(); download(a); });
    });
    $('bd-labels').addEventListener('click', function (ev) {
      if (ev.target.matches && ev.target.matches('a.csv')) { ev.preventDefault(); download(ev.target); }
    });
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
