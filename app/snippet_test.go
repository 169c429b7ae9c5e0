package app

import (
	"bytes"
	"testing"
)

// A sanity check that the embedded file is the right one; the snippet's
// behaviour is tested in a browser (hits_browser_test.go).
func TestSnippetJSIsEmbedded(t *testing.T) {
	t.Parallel()
	for _, want := range []string{"data-counter-value", "/v1/hits/", "/v1/snippet.js", "credentials: 'omit'", "counters:ignore"} {
		if !bytes.Contains(snippetJS, []byte(want)) {
			t.Errorf("snippet.js does not mention %q", want)
		}
	}
}

// SnippetJS lets the external tests compare the served script with it.
var SnippetJS = snippetJS
