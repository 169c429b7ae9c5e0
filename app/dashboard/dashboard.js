/*
 * The counters dashboard: browse counters by prefix, see each one's value
 * and a chart of its history, and the prefix's summed history.
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
    return Promise.all(work).catch(function (e) { showError(e.message); });
  }

  function keyState() {
    $('key-state').textContent = apiKey() ? 'key set for this tab' : 'no key (works from loopback without COUNTERS_API_TOKEN)';
  }

  document.addEventListener('DOMContentLoaded', function () {
    var params = new URLSearchParams(location.search);
    ['prefix', 'step', 'tz', 'from', 'to'].forEach(function (k) { if (params.has(k)) $(k).value = params.get(k); });
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
    keyState();
    load();
  });
})();
