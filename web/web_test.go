package web_test

import (
	"bytes"
	"testing"

	"countersvc/web"
)

// These are sanity checks that the embedded files are the right ones; the
// snippet's behaviour is tested in a browser elsewhere.

func TestSnippetJSIsEmbedded(t *testing.T) {
	for _, want := range []string{"data-counter-value", "/v1/hits/", "/v1/snippet.js", "credentials: 'omit'"} {
		if !bytes.Contains(web.SnippetJS, []byte(want)) {
			t.Errorf("snippet.js does not mention %q", want)
		}
	}
}

func TestExampleHTMLIsEmbedded(t *testing.T) {
	for _, want := range []string{"data-counter-value", `src="/v1/snippet.js"`, `data-name="hits/example"`, "/v1/counters/hits%2Fexample/badge.svg"} {
		if !bytes.Contains(web.ExampleHTML, []byte(want)) {
			t.Errorf("example.html does not contain %q", want)
		}
	}
}
