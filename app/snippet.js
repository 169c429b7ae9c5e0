/*
 * Page-hit snippet of the counter service.
 *
 *   <script async src="https://HOST/v1/snippet.js" data-name="hits/docs/index.html"></script>
 *   <span data-counter-value></span>
 *
 * Counts one hit on the counter (default "hits/" + host + path), with the
 * page's referrer and campaign (utm_source, utm_medium, utm_campaign) for
 * its breakdowns, and writes its value into every element with
 * data-counter-value whose attribute is empty or equals the counter name. data-format="comma" (12,345) or
 * "locale" (the reader's own separators), on the script or on an element,
 * formats the number.
 *
 * data-live on the script keeps the value up to date in place: after the
 * hit, the snippet listens to the page's live updates (EventSource on
 * /v1/hits/NAME/events, which counts no hit). The browser reconnects by
 * itself and resumes with the last event's id; browsers without
 * EventSource keep the value of the hit.
 *
 * Own visits: a browser whose localStorage holds "counters:ignore" =
 * "true" for the page's site is not counted; the elements still show the
 * value, read from the live stream (which counts nothing). Opening any
 * page of the site with #counters:ignore=true sets the flag in that
 * browser, #counters:ignore=false clears it (the dashboard links to both;
 * docs/page-hits.md). No other page and no other site sees the flag.
 *
 * Written in ES5 without dependencies so it runs on any page it is pasted
 * into, and wrapped in try/catch so a failure here never breaks that page:
 * the elements then simply keep their text. No cookies are sent.
 */
(function () {
  'use strict';

  var SUFFIX = '/v1/snippet.js';

  function debug(msg, err) {
    try {
      if (window.console && console.debug) console.debug('[counter snippet] ' + msg, err || '');
    } catch (e) { /* logging must never throw either */ }
  }

  // The URL of a script tag without query or fragment, so that
  // ".../v1/snippet.js?v=2" is recognised too.
  function pathOf(src) {
    return String(src || '').split('#')[0].split('?')[0];
  }

  function isOurs(el) {
    var p = pathOf(el.src);
    return p.length >= SUFFIX.length && p.slice(-SUFFIX.length) === SUFFIX;
  }

  // document.currentScript is the reliable answer; the scan covers browsers
  // without it, where the last matching tag is the one that just ran.
  function findScript() {
    var cur = document.currentScript;
    if (cur && isOurs(cur)) return cur;
    var all = document.getElementsByTagName('script');
    for (var i = all.length - 1; i >= 0; i--) {
      if (isOurs(all[i])) return all[i];
    }
    return null;
  }

  function format(value, how) {
    var s = String(value);
    if (how === 'comma') return s.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
    if (how === 'locale' && value.toLocaleString) return value.toLocaleString();
    return s;
  }

  function show(name, value, defaultFormat) {
    var els = document.querySelectorAll('[data-counter-value]');
    for (var i = 0; i < els.length; i++) {
      var want = els[i].getAttribute('data-counter-value');
      if (want === '' || want === name) {
        els[i].textContent = format(value, els[i].getAttribute('data-format') || defaultFormat);
      }
    }
  }

  // An async script may run, and its answer may arrive, before the elements
  // below it are parsed; wait for them in that case.
  function whenReady(fn) {
    if (document.readyState === 'loading') {
      document.addEventListener('DOMContentLoaded', fn);
    } else {
      fn();
    }
  }

  function request(url, done) {
    if (window.fetch) {
      var p = window.fetch(url, { method: 'GET', mode: 'cors', credentials: 'omit', cache: 'no-store' })
        .then(function (r) {
          if (!r.ok) throw new Error('HTTP ' + r.status);
          return r.json();
        })
        .then(function (body) { done(null, body); });
      // Bracket syntax: ".catch" is a syntax error in very old engines.
      p['catch'](function (err) { done(err); });
      return;
    }
    var xhr = new XMLHttpRequest();
    xhr.open('GET', url, true);
    xhr.withCredentials = false;
    xhr.onreadystatechange = function () {
      if (xhr.readyState !== 4) return;
      if (xhr.status < 200 || xhr.status > 299) return done(new Error('HTTP ' + xhr.status));
      var body;
      try { body = JSON.parse(xhr.responseText); } catch (e) { return done(e); }
      done(null, body);
    };
    xhr.send();
  }

  // live shows each value the page's stream sends, or only the first
  // when once. Values only move forward on the stream (the service sees
  // to it), so the latest event is always the one to show.
  function live(base, name, defaultFormat, once) {
    if (!window.EventSource) return debug('no EventSource: the value stays as counted');
    var es = new EventSource(base + '/v1/hits/' + encodeURIComponent(name) + '/events');
    es.addEventListener('counter', function (ev) {
      try {
        if (once) es.close();
        var body = JSON.parse(ev.data);
        if (typeof body.value !== 'number' || !isFinite(body.value)) return;
        whenReady(function () { show(name, body.value, defaultFormat); });
      } catch (e) { debug('cannot show live value', e); }
    });
  }

  // IGNORE is the opt-out flag, kept per site by the browser.
  var IGNORE = 'counters:ignore';

  // optedOut reads (and, when the page's fragment says so, first sets or
  // clears) this browser's opt-out for the site. Without localStorage (a
  // sandboxed frame, storage turned off) the visit is counted.
  function optedOut() {
    try {
      var m = /^#counters:ignore=(true|false)$/.exec(location.hash);
      if (m) {
        if (m[1] === 'true') localStorage.setItem(IGNORE, 'true');
        else localStorage.removeItem(IGNORE);
        var msg = m[1] === 'true' ? 'Your visits to ' + location.host + ' are no longer counted in this browser.'
          : 'Your visits to ' + location.host + ' are counted again in this browser.';
        if (window.console && console.info) console.info('[counter snippet] ' + msg);
        if (window.history && history.replaceState) history.replaceState(null, '', location.pathname + location.search);
        if (window.alert) setTimeout(function () { window.alert(msg); }, 0);
      }
      return localStorage.getItem(IGNORE) === 'true';
    } catch (e) {
      return false;
    }
  }

  // hitQuery says where the visitor came from, for the page's breakdowns:
  // ref, the page's document.referrer (sent even when empty, which says
  // "no referrer"; the service keeps only its host), and the page URL's
  // utm_source, utm_medium and utm_campaign. Nothing else of the URL is sent.
  function hitQuery() {
    var q = 'ref=' + encodeURIComponent(document.referrer || '');
    var keys = ['utm_source', 'utm_medium', 'utm_campaign'];
    var pairs = String(location.search || '').replace(/^\?/, '').split('&');
    for (var i = 0; i < pairs.length; i++) {
      var eq = pairs[i].indexOf('=');
      var k = eq < 0 ? pairs[i] : pairs[i].slice(0, eq);
      for (var j = 0; j < keys.length; j++) {
        if (k === keys[j] && eq >= 0) q += '&' + k + '=' + pairs[i].slice(eq + 1);
      }
    }
    return q;
  }

  try {
    var script = findScript();
    if (!script) return debug('cannot find own <script> tag');
    var src = pathOf(script.src); // the src property is already absolute
    var base = src.slice(0, src.length - SUFFIX.length);
    var name = script.getAttribute('data-name') || ('hits/' + location.host + location.pathname);
    var defaultFormat = script.getAttribute('data-format') || '';

    if (optedOut()) {
      debug('not counted: this browser opted out (localStorage ' + IGNORE + ')');
      // The value without a hit: the stream's first event, and (with
      // data-live) those after it.
      return live(base, name, defaultFormat, !script.hasAttribute('data-live'));
    }

    request(base + '/v1/hits/' + encodeURIComponent(name) + '?' + hitQuery(), function (err, body) {
      try {
        if (err) return debug('request failed', err);
        if (!body || typeof body.value !== 'number' || !isFinite(body.value)) {
          return debug('unexpected answer', body);
        }
        whenReady(function () {
          try { show(name, body.value, defaultFormat); } catch (e) { debug('cannot show value', e); }
        });
        if (script.hasAttribute('data-live')) live(base, name, defaultFormat);
      } catch (e) {
        debug('failed', e);
      }
    });
  } catch (e) {
    debug('failed', e);
  }
})();
