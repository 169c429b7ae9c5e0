// Package web holds the static files the service serves for the public
// page-hit feature, embedded so the binary is self-contained.
package web

import _ "embed"

// SnippetJS is the page-hit script served at GET /v1/snippet.js
// (Content-Type: text/javascript; charset=utf-8).
//
//go:embed snippet.js
var SnippetJS []byte

// ExampleHTML is a small page that shows the snippet and a badge at work,
// meant to be served by the service itself (text/html; charset=utf-8).
//
//go:embed example.html
var ExampleHTML []byte
