package client

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Annotation is a short text on a counter (Name) or on every counter
// under a prefix (Prefix), at a moment.
type Annotation struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name,omitempty"`
	Prefix    string    `json:"prefix,omitempty"`
	At        time.Time `json:"at"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}

// AnnotationRequest is a new annotation: Name or Prefix, Text (1 to 280
// characters on one line), and At (the zero time for now).
type AnnotationRequest struct {
	Name, Prefix string
	At           time.Time
	Text         string
}

// AnnotationRange bounds the annotations listed by their At, [From, To);
// a zero end is open.
type AnnotationRange struct {
	From, To time.Time
}

// CreateAnnotation keeps an annotation and returns it. Errors:
// InvalidArgument (empty or long text, both or neither of Name and
// Prefix), PermissionDenied (a reserved name, or a key outside it).
func (c *Client) CreateAnnotation(ctx context.Context, a AnnotationRequest) (Annotation, error) {
	req := map[string]any{"text": a.Text}
	if a.Name != "" {
		req["name"] = a.Name
	}
	if a.Prefix != "" {
		req["prefix"] = a.Prefix
	}
	if !a.At.IsZero() {
		req["at"] = a.At.Format(time.RFC3339Nano)
	}
	body, err := jsonBody(req)
	if err != nil {
		return Annotation{}, err
	}
	var out Annotation
	_, err = c.call(ctx, request{method: http.MethodPost, path: "/annotations", body: body, retry: retryUnsent}, &out)
	return out, err
}

// Annotations lists, by At, the annotations the counter name sees: its
// own and those of every prefix that holds it (at most 1,000).
func (c *Client) Annotations(ctx context.Context, name string, r AnnotationRange) ([]Annotation, error) {
	return c.annotations(ctx, "name", name, r)
}

// PrefixAnnotations lists, by At, the annotations a prefix sees: its own,
// those of the prefixes that hold it and those of the names under it.
func (c *Client) PrefixAnnotations(ctx context.Context, prefix string, r AnnotationRange) ([]Annotation, error) {
	return c.annotations(ctx, "prefix", prefix, r)
}

func (c *Client) annotations(ctx context.Context, key, target string, r AnnotationRange) ([]Annotation, error) {
	q := HistoryOptions{From: r.From, To: r.To}.query()
	q.Set(key, target)
	var out struct {
		Annotations []Annotation `json:"annotations"`
	}
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/annotations", query: q}, &out)
	return out.Annotations, err
}

// DeleteAnnotation deletes the annotation id. Errors: NotFound.
func (c *Client) DeleteAnnotation(ctx context.Context, id int64) error {
	_, err := c.call(ctx, request{method: http.MethodDelete, path: "/annotations/" + strconv.FormatInt(id, 10)}, nil)
	return err
}

// HistoryCSV writes the counts of the counter name per period to w as the
// service's CSV: the header name,start,end,count, then a line per period,
// its times in opts.TZ.
func (c *Client) HistoryCSV(ctx context.Context, name string, opts HistoryOptions, w io.Writer) error {
	_, err := c.csv(ctx, "/counters/"+esc(name)+"/history", opts.query(), w)
	return err
}

// PrefixHistoryCSV is HistoryCSV of the sums under prefix; the name column
// holds the prefix.
func (c *Client) PrefixHistoryCSV(ctx context.Context, prefix string, opts HistoryOptions, w io.Writer) error {
	q := opts.query()
	q.Set("prefix", prefix)
	_, err := c.csv(ctx, "/history", q, w)
	return err
}

// ExportCSV writes every counter under prefix ("" for all) to w as CSV
// (name,value,created_at,updated_at after a header row), as the service
// streams them, and returns how many counters it wrote. A stream the
// service ended with its error line, or one cut short, is an error.
func (c *Client) ExportCSV(ctx context.Context, prefix string, w io.Writer) (int, error) {
	q := url.Values{}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	return c.csv(ctx, "/export", q, w)
}

// csv reads path's CSV answer record by record, each held to the header's
// fields, and writes it to w; it returns the records after the header.
func (c *Client) csv(ctx context.Context, path string, q url.Values, w io.Writer) (int, error) {
	q.Set("format", "csv")
	res, err := c.send(ctx, request{method: http.MethodGet, path: path, query: q, header: http.Header{"Accept": {"text/csv"}}})
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	in, out := csv.NewReader(res.Body), csv.NewWriter(w)
	n := -1 // the header is no counter
	for {
		rec, err := in.Read()
		if errors.Is(err, io.EOF) {
			out.Flush()
			return max(n, 0), out.Error()
		}
		if len(rec) == 1 && strings.HasPrefix(rec[0], "error: ") {
			code, msg, _ := strings.Cut(strings.TrimPrefix(rec[0], "error: "), ": ")
			out.Flush()
			return max(n, 0), &Error{Status: res.StatusCode, Code: Code(code), Message: msg, RequestID: res.Header.Get("X-Request-ID")}
		}
		if err != nil {
			out.Flush()
			return max(n, 0), fmt.Errorf("client: the CSV stream failed after %d records: %w", max(n, 0), err)
		}
		if err := out.Write(rec); err != nil {
			return max(n, 0), err
		}
		n++
	}
}
